import type { CommandEvent, CommandRequest } from "@cubicle/providers/contract";
import type { Context } from "hono";
import type { Machine } from "../computers/repository.ts";
import type { AppEnv } from "../context.ts";
import { toHttpProblem } from "../http/errors.ts";
import type { ShellRequest } from "./schemas.ts";

/** The longest a caller may let one command run (the default is SANDBOX_COMMAND_TIMEOUT_MS). */
export const MAX_SHELL_TIMEOUT_MS = 3_600_000;
export const DEFAULT_SHELL_OUTPUT_BYTES = 1024 * 1024;
export const MAX_SHELL_OUTPUT_BYTES = 16 * 1024 * 1024;
/**
 * How long to wait for a command's first event before answering. A command that fails to start
 * (no such folder, computer stopped) fails within it and is answered as a problem; one that starts
 * but stays quiet gets its 200 and stream headers anyway, so clients' header timeouts never fire.
 */
const FIRST_EVENT_WAIT_MS = 1_000;

/** What the stream carries besides the provider's events: a failure after the stream began. */
export type ShellLine = CommandEvent | { type: "error"; code: string; message: string };

const encoder = new TextEncoder();
const line = (event: ShellLine) => encoder.encode(`${JSON.stringify(event)}\n`);

function errorLine(error: unknown): ShellLine {
  const problem = toHttpProblem(error);
  return problem
    ? { type: "error", code: problem.code, message: problem.detail ?? problem.code }
    : { type: "error", code: "INTERNAL", message: "the command's output stream failed" };
}

/** Where a shell route runs the caller's command, and how it records it. */
export interface ShellTarget {
  /** The home-relative working folder. */
  cwd: string;
  /** Variables the route sets, under the caller's own. */
  env: Record<string, string>;
  audit(data: Record<string, unknown>): Promise<void>;
  /** Runs the provider work on the machine (a session's resumes a computer found gone and retries). */
  use<T>(work: (machine: Machine) => Promise<T>): Promise<T>;
}

/**
 * Every shell route's answer: the command is audited before it runs (a command that never ends
 * is on record too), then its events stream back as NDJSON.
 */
export async function shellResponse(
  c: Context<AppEnv>,
  body: ShellRequest,
  target: ShellTarget,
): Promise<Response> {
  const deps = c.var.deps;
  const timeoutMs = body.timeoutMs ?? deps.env.sandbox.commandTimeoutMs;
  await target.audit({ command: body.command.slice(0, 2_000), cwd: target.cwd, timeoutMs });
  const request = {
    command: body.command,
    cwd: target.cwd,
    env: { ...target.env, ...body.env },
    timeoutMs,
    maxOutputBytes: body.maxOutputBytes ?? DEFAULT_SHELL_OUTPUT_BYTES,
  };
  const stream = await target.use((machine) =>
    shellStream(machine, request, [c.req.raw.signal, deps.stopping]),
  );
  return c.body(stream, 200, {
    "content-type": "application/x-ndjson; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
  });
}

/**
 * Runs the command and returns its events as NDJSON, one JSON object per line, ending with the
 * `exit` event (or an `error` line when the stream broke after it began). The command is killed
 * when any of `signals` aborts: the client went away, or the api is shutting down.
 */
async function shellStream(
  machine: Machine,
  request: Omit<CommandRequest, "signal">,
  signals: AbortSignal[],
): Promise<ReadableStream<Uint8Array>> {
  const { provider, ref } = machine;
  const abort = new AbortController();
  const signal = AbortSignal.any([abort.signal, ...signals]);
  const events = provider.run(ref, { ...request, signal })[Symbol.asyncIterator]();

  let timer: NodeJS.Timeout | undefined;
  const first = events.next();
  // Awaited below, possibly after the race; until then a rejection is not "unhandled".
  first.catch(() => undefined);
  const early = await Promise.race([
    first.then((result) => ({ result })),
    new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), FIRST_EVENT_WAIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  // Thrown before the response starts (the race rethrows it): answered as problem JSON.

  let pending: Promise<IteratorResult<CommandEvent>> | null = early ? null : first;
  let ended = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (!early) return;
      if (early.result.done) {
        ended = true;
        controller.close();
      } else controller.enqueue(line(early.result.value));
    },
    async pull(controller) {
      if (ended) return;
      try {
        const next = await (pending ?? events.next());
        pending = null;
        if (next.done) {
          ended = true;
          controller.close();
          return;
        }
        controller.enqueue(line(next.value));
      } catch (error) {
        ended = true;
        controller.enqueue(line(errorLine(error)));
        controller.close();
      }
    },
    async cancel() {
      abort.abort();
      await events.return?.(undefined).catch(() => undefined);
    },
  });
}
