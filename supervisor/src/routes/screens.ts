import { Hono } from "hono";
import { z } from "zod";
import { validateActions } from "../actions.ts";
import type { ContainerManager } from "../containers/manager.ts";
import { computerRef, jsonBody, screenIndex } from "./params.ts";

const ControlSchema = z.object({
  // VNC authentication uses at most 8 characters; longer would silently be cut
  password: z.string().regex(/^[\x21-\x7e]{1,8}$/, "1 to 8 printable ASCII characters (VNC's limit)"),
});

const ActSchema = z.object({ actions: z.unknown() });

export function screenRoutes(manager: ContainerManager) {
  return new Hono()
    .put("/computers/:homeKey/screens/:index", async (c) =>
      c.json(await manager.openScreen(computerRef(c), screenIndex(c))),
    )
    .delete("/computers/:homeKey/screens/:index", async (c) => {
      await manager.closeScreen(computerRef(c), screenIndex(c));
      return c.body(null, 204);
    })
    .put("/computers/:homeKey/screens/:index/control", async (c) => {
      const ref = computerRef(c);
      const index = screenIndex(c);
      const { password } = await jsonBody(c, ControlSchema);
      return c.json(await manager.openControl(ref, index, password));
    })
    .delete("/computers/:homeKey/screens/:index/control", async (c) => {
      await manager.closeControl(computerRef(c), screenIndex(c));
      return c.body(null, 204);
    })
    .get("/computers/:homeKey/screens/:index/observe", async (c) => {
      const shot = await manager.observe(computerRef(c), screenIndex(c));
      return c.body(new Uint8Array(shot.png), 200, {
        "content-type": "image/png",
        "cache-control": "no-store",
        "x-width": String(shot.width),
        "x-height": String(shot.height),
        "x-cursor-x": String(shot.cursor.x),
        "x-cursor-y": String(shot.cursor.y),
        // titles are any UTF-8; headers are not, so the title travels percent-encoded
        ...(shot.activeWindow === null ? {} : { "x-active-window": encodeURIComponent(shot.activeWindow) }),
      });
    })
    .post("/computers/:homeKey/screens/:index/act", async (c) => {
      const ref = computerRef(c);
      const index = screenIndex(c);
      const { actions } = await jsonBody(c, ActSchema);
      // the whole batch is checked before anything runs
      return c.json(await manager.act(ref, index, validateActions(actions)));
    });
}
