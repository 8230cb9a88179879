import { Hono } from "hono";
import { z } from "zod";
import type { ContainerManager } from "../containers/manager.ts";
import { assertHomeKey } from "../homes.ts";
import { computerRef, IDENTITY_PATTERN, jsonBody } from "./params.ts";

const CreateSchema = z.object({
  computerId: z.string().regex(IDENTITY_PATTERN, "the computer's id"),
  workspaceId: z.string().regex(IDENTITY_PATTERN, "the computer's workspace id"),
});

export function computerRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/computers", async (c) => c.json({ computers: await manager.list() }))
    .put("/computers/:homeKey", async (c) => {
      const homeKey = assertHomeKey(c.req.param("homeKey"));
      const identity = await jsonBody(c, CreateSchema);
      const created = await manager.create({ homeKey, ...identity });
      return c.json(created, created.fresh ? 201 : 200);
    })
    .get("/computers/:homeKey", async (c) => c.json(await manager.status(computerRef(c))))
    .post("/computers/:homeKey/stop", async (c) => {
      await manager.stop(computerRef(c));
      return c.body(null, 204);
    })
    .delete("/computers/:homeKey", async (c) => c.json({ removed: await manager.destroy(computerRef(c)) }));
}
