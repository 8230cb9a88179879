import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";
import { computerRef } from "./params.ts";

/** What a checkpoint asks of the browsers before it exports the home (ContainerManager). */
export function browserRoutes(manager: ContainerManager) {
  return new Hono()
    .post("/computers/:homeKey/browsers/settle", async (c) => {
      await manager.settleBrowsers(computerRef(c));
      return c.body(null, 204);
    })
    .post("/computers/:homeKey/browsers/close", async (c) => {
      await manager.closeBrowsers(computerRef(c));
      return c.body(null, 204);
    });
}
