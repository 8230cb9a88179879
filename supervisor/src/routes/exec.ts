import { ndjsonStream } from "@cubicle/providers/supervisor-wire";
import { Hono } from "hono";
import { z } from "zod";
import type { ContainerManager } from "../containers/manager.ts";
import { computerRef, jsonBody } from "./params.ts";

const noNul = (value: string) => !value.includes("\0");

const ExecSchema = z.object({
  command: z.string().min(1).max(1_000_000).refine(noNul, "must not contain NUL"),
  cwd: z.string().max(4_096).optional(),
  env: z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, "an environment variable name"),
      z.string().max(131_072).refine(noNul, "must not contain NUL"),
    )
    .optional()
    .refine((env) => Object.keys(env ?? {}).length <= 256, "at most 256 variables"),
  timeoutMs: z.number().int().min(1).max(86_400_000),
  maxOutputBytes: z
    .number()
    .int()
    .min(0)
    .max(256 * 1024 * 1024)
    .optional(),
});

/**
 * Runs a command and streams its events as NDJSON. Everything that can be refused (computer,
 * body, working directory) is refused before the stream starts; once it has, the last line is
 * always the `exit` event. A client that disconnects kills the command.
 */
export function execRoutes(manager: ContainerManager) {
  return new Hono().post("/computers/:homeKey/exec", async (c) => {
    const ref = computerRef(c);
    const request = await jsonBody(c, ExecSchema);
    const controller = new AbortController();
    const disconnected = () => controller.abort();
    c.req.raw.signal.addEventListener("abort", disconnected, { once: true });
    const events = await manager.exec(ref, request, controller.signal);
    const stream = ndjsonStream(events[Symbol.asyncIterator](), disconnected);
    return c.body(stream, 200, { "content-type": "application/x-ndjson", "cache-control": "no-store" });
  });
}
