import { DEFAULT_MAX_READ_BYTES } from "@cubicle/providers/contract";
import { Hono } from "hono";
import type { ContainerManager } from "../containers/manager.ts";
import { SupervisorProblem } from "../problems.ts";
import { booleanQuery, computerRef, integerQuery, sizedBody } from "./params.ts";

const MAX_FILE_BYTES = 16 * 1024 * 1024 * 1024;

function pathQuery(path: string | undefined): string {
  if (path === undefined) throw new SupervisorProblem("INVALID_REQUEST", 'path: required ("" is the home)');
  return path;
}

/**
 * Files in the home. GET answers a folder's entries as JSON or a file's bytes (never part of a
 * file: larger than maxBytes is 413); `expect` makes the other kind an error instead.
 */
export function fileRoutes(manager: ContainerManager) {
  return new Hono()
    .get("/computers/:homeKey/files", async (c) => {
      const ref = computerRef(c);
      const expect = c.req.query("expect");
      if (expect !== undefined && expect !== "file" && expect !== "directory") {
        throw new SupervisorProblem("INVALID_REQUEST", 'expect: "file" or "directory"');
      }
      const opened = await manager.openPath(ref, c.req.query("path") ?? "", {
        maxBytes: integerQuery(c, "maxBytes", DEFAULT_MAX_READ_BYTES, MAX_FILE_BYTES),
        ...(expect ? { expect } : {}),
      });
      if (opened.kind === "directory") return c.json({ entries: opened.entries });
      return c.body(opened.body, 200, {
        "content-type": "application/octet-stream",
        "content-length": String(opened.size),
      });
    })
    .put("/computers/:homeKey/files", async (c) => {
      const ref = computerRef(c);
      const path = pathQuery(c.req.query("path"));
      const executable = booleanQuery(c, "executable");
      const { size, body } = sizedBody(c, MAX_FILE_BYTES);
      await manager.writeFile(ref, path, body, { size, executable });
      return c.body(null, 204);
    })
    .delete("/computers/:homeKey/files", async (c) => {
      const ref = computerRef(c);
      await manager.deleteFile(ref, pathQuery(c.req.query("path")));
      return c.body(null, 204);
    });
}
