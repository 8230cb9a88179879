import type { HomeListingResult } from "@cubicle/providers/supervisor-wire";
import { Hono } from "hono";
import { z } from "zod";
import type { ContainerManager } from "../containers/manager.ts";
import { homeRelativePath } from "../paths.ts";
import { SupervisorProblem } from "../problems.ts";
import { computerRef, jsonBody } from "./params.ts";

const TAR_HEADERS = { "content-type": "application/x-tar", "cache-control": "no-store" };

const ArchiveSchema = z.object({ paths: z.array(z.string()) });

/** The named paths normalised by the home's path rules; the first refused one names its index. */
function homePaths(paths: readonly string[]): string[] {
  return paths.map((path, index) => {
    try {
      return homeRelativePath(path);
    } catch (error) {
      if (!(error instanceof SupervisorProblem)) throw error;
      throw new SupervisorProblem(error.code, `paths.${index}: ${error.detail}`, {
        errors: [{ path: `paths.${index}`, message: error.detail }],
      });
    }
  });
}

/**
 * The home as tar streams, out (checkpoints) and in (restores): GET the whole home, POST only the
 * entries named in the body (after a listing: an incremental checkpoint), PUT a whole home in.
 */
export function archiveRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/computers/:homeKey/archive", async (c) => {
      const tar = await manager.exportHome(computerRef(c));
      return c.body(tar, 200, TAR_HEADERS);
    })
    .post("/computers/:homeKey/archive", async (c) => {
      const ref = computerRef(c);
      const paths = homePaths((await jsonBody(c, ArchiveSchema)).paths);
      return c.body(await manager.exportHome(ref, { paths }), 200, TAR_HEADERS);
    })
    .get("/computers/:homeKey/home-listing", async (c) => {
      const listing = await manager.listHome(computerRef(c));
      return c.json({ listing } satisfies HomeListingResult, 200, { "cache-control": "no-store" });
    })
    .put("/computers/:homeKey/archive", async (c) => {
      const ref = computerRef(c);
      await manager.importHome(ref, c.req.raw.body ?? new Blob([]).stream());
      return c.body(null, 204);
    });
}
