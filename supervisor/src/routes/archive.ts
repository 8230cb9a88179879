import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";
import { computerRef } from "./params.ts";

/** The whole home as one tar stream, out (checkpoints) and in (restores). */
export function archiveRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/computers/:homeKey/archive", async (c) => {
      const tar = await manager.exportHome(computerRef(c));
      return c.body(tar, 200, { "content-type": "application/x-tar", "cache-control": "no-store" });
    })
    .put("/computers/:homeKey/archive", async (c) => {
      const ref = computerRef(c);
      await manager.importHome(ref, c.req.raw.body ?? new Blob([]).stream());
      return c.body(null, 204);
    });
}
