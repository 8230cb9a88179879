import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";

/**
 * `/health`, unauthenticated: whether Docker answers and which computer image it holds.
 * `/alive`, unauthenticated: that this process answers at all, touching nothing else (the client
 * asks it while calls are in flight, see liveness.ts).
 * `/diagnosis`, behind the token like every other route: `cubicle doctor`'s closer look.
 */
export function healthRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/alive", (c) => c.body(null, 204))
    .get("/health", async (c) => {
      const health = await manager.health();
      return c.json(health, health.ok ? 200 : 503);
    })
    .get("/diagnosis", async (c) => c.json(await manager.diagnose()));
}
