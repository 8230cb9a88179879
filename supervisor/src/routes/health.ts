import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";

/**
 * `/health`, unauthenticated: whether Docker answers and which computer image it holds.
 * `/diagnosis`, behind the token like every other route: `cubicle doctor`'s closer look.
 */
export function healthRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/health", async (c) => {
      const health = await manager.health();
      return c.json(health, health.ok ? 200 : 503);
    })
    .get("/diagnosis", async (c) => c.json(await manager.diagnose()));
}
