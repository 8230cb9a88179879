import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";

/** Unauthenticated: whether Docker answers and which computer image it holds. */
export function healthRoutes(manager: ContainerManager) {
  return new Hono().get("/health", async (c) => {
    const health = await manager.health();
    return c.json(health, health.ok ? 200 : 503);
  });
}
