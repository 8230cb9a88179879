import { randomUUID } from "node:crypto";
import { CommandExitError, type Sandbox } from "@e2b/desktop";
import {
  type CommandEvent,
  type CommandRequest,
  DEFAULT_MAX_OUTPUT_BYTES,
  EXIT_ABORTED,
  EXIT_TIMED_OUT,
  OUTPUT_TRUNCATED_MARKER,
} from "../contract/index.ts";
import { homeRelativePath } from "../kernel/home-path.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { HOME, kitCommand, kitProgram } from "./kit.ts";
import { asProviderError } from "./sandboxes.ts";

/** Every process a run starts inherits this variable, so the whole tree can be found and killed. */
const RUN_MARK = "CUBICLE_RUN";

/**
 * Kills every process of one run, found by its mark (E2B kills only the pid it started; a
 * command's children, daemons included, would outlive it). Repeated until none is left, since a
 * dying shell may still fork.
 */
const killRunScript = (runId: string) => `for _ in 1 2 3 4 5 6 7 8 9 10; do
  found=
  for environ in /proc/[0-9]*/environ; do
    if grep -qzx ${shellQuote(`${RUN_MARK}=${runId}`)} "$environ" 2>/dev/null; then
      pid=\${environ#/proc/}; kill -KILL "\${pid%/environ}" 2>/dev/null && found=1
    fi
  done
  [ -n "$found" ] || exit 0
  sleep 0.1
done`;

type Outcome =
  | { kind: "exit"; code: number }
  | { kind: "timeout" }
  | { kind: "abort" }
  | { kind: "error"; error: unknown };

/**
 * A command in the sandbox: stdout and stderr streamed as E2B delivers them, the exit code kept
 * (the SDK throws CommandExitError for a non-zero one: that is a result here), the timeout and an
 * abort enforced by killing the run's whole process tree, and the output capped in the sandbox
 * (kit/run) so that neither the SDK, which keeps all of it, nor the api holds more than the cap.
 */
export async function* runCommand(sandbox: Sandbox, request: CommandRequest): AsyncGenerator<CommandEvent> {
  const cwd = request.cwd === undefined ? "" : homeRelativePath(request.cwd);
  const maxOutputBytes = request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const runId = randomUUID();
  const queue: CommandEvent[] = [];
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  // a holder, not a variable: callbacks set it, so the loop must read it afresh each time
  const end: { outcome: Outcome | null } = { outcome: null };
  const settle = (next: Outcome) => {
    end.outcome ??= next;
    notify();
  };

  let emitted = 0;
  let truncated = false;
  const take = (type: "stdout" | "stderr", data: string) => {
    if (truncated) return;
    const size = Buffer.byteLength(data);
    if (emitted + size <= maxOutputBytes) {
      emitted += size;
      queue.push({ type, data });
    } else {
      const room = maxOutputBytes - emitted;
      const part = Buffer.from(data)
        .subarray(0, room)
        .toString("utf8")
        .replace(/\uFFFD$/, "");
      if (part) queue.push({ type, data: part });
      emitted = maxOutputBytes;
      truncated = true;
      queue.push({ type: "stdout", data: OUTPUT_TRUNCATED_MARKER });
    }
    notify();
  };

  // one byte more than the cap per stream, so that output past the cap is seen here and marked
  const command = [kitProgram("run"), String(maxOutputBytes + 1), request.command].map(shellQuote).join(" ");
  void sandbox.commands
    .run(command, {
      background: true,
      // Cubicle enforces the timeout itself; the SDK's would only drop the stream
      timeoutMs: 0,
      cwd: cwd === "" ? HOME : `${HOME}/${cwd}`,
      envs: { ...request.env, HOME, [RUN_MARK]: runId },
      onStdout: (data) => take("stdout", data),
      onStderr: (data) => take("stderr", data),
    })
    .then(
      async (handle) => {
        try {
          const result = await handle.wait();
          settle({ kind: "exit", code: result.exitCode });
        } catch (error) {
          if (error instanceof CommandExitError) settle({ kind: "exit", code: error.exitCode });
          else settle({ kind: "error", error });
        }
      },
      (error: unknown) => settle({ kind: "error", error }),
    );

  const timer = setTimeout(() => settle({ kind: "timeout" }), request.timeoutMs);
  const onAbort = () => settle({ kind: "abort" });
  if (request.signal?.aborted) onAbort();
  request.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      while (queue.length > 0) yield queue.shift() as CommandEvent;
      const ended = end.outcome;
      if (ended !== null) {
        if (ended.kind === "exit") {
          // output that arrived with the end is still queued
          while (queue.length > 0) yield queue.shift() as CommandEvent;
          yield { type: "exit", code: ended.code, truncated };
          return;
        }
        if (ended.kind === "error") throw asProviderError("running a command", ended.error);
        await killRun(sandbox, runId);
        yield ended.kind === "timeout"
          ? {
              type: "exit",
              code: EXIT_TIMED_OUT,
              message: `command timed out after ${request.timeoutMs} ms`,
              truncated,
            }
          : { type: "exit", code: EXIT_ABORTED, message: "command aborted", truncated };
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
    // a caller that stops reading ends the command too
    if (end.outcome === null) await killRun(sandbox, runId).catch(() => undefined);
  }
}

async function killRun(sandbox: Sandbox, runId: string): Promise<void> {
  await kitCommand(sandbox, killRunScript(runId), { timeoutMs: 30_000 });
}
