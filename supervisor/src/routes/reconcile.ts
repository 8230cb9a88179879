import { Hono } from "hono";
import { z } from "zod";
import type { ContainerManager } from "../containers/manager.ts";
import { HOME_KEY_PATTERN } from "../homes.ts";
import { jsonBody } from "./params.ts";

const ReconcileSchema = z.object({
  homeKeys: z.array(z.string().regex(HOME_KEY_PATTERN, "a home key")).max(1_000_000),
});

/** Removes managed computers the api no longer knows (orphans); their homes stay. */
export function reconcileRoutes(manager: ContainerManager) {
  return new Hono().post("/reconcile", async (c) => {
    const { homeKeys } = await jsonBody(c, ReconcileSchema);
    return c.json({ removed: await manager.reconcile(new Set(homeKeys)) });
  });
}
