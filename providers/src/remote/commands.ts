import { randomUUID } from "node:crypto";
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
import { resolveCwd } from "./files.ts";
import type { SandboxMachine } from "./machine.ts";

/** Every process a run starts inherits this variable, so the whole tree can be found and killed. */
const RUN_MARK = "CUBICLE_RUN";

/**
 * Kills every process of one run, found by its mark (vendors kill only the pid they started, if
 * any; a command's children, daemons included, would outlive it). Repeated until none is left, since a
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

/** How long a killed command's last output may take to arrive. */
const OUTPUT_DRAIN_MS = 5_000;

type Outcome =
  | { kind: "exit"; code: number }
  | { kind: "timeout" }
  | { kind: "abort" }
  | { kind: "error"; error: unknown };

/**
 * A command in the sandbox: stdout and stderr streamed as the vendor delivers them, the exit code
 * kept, the timeout and an abort enforced by killing the run's whole process tree, and the output
 * capped in the sandbox (kit/run) so that neither the vendor's SDK, which may keep all of it, nor
 * the api holds more than the cap.
 */
export async function* runCommand(
  machine: SandboxMachine,
  request: CommandRequest,
): AsyncGenerator<CommandEvent> {
  const cwd = await resolveCwd(machine, request.cwd === undefined ? "" : homeRelativePath(request.cwd));
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
  const command = [machine.program("run"), String(maxOutputBytes + 1), request.command]
    .map(shellQuote)
    .join(" ");
  const streamed = machine.shell
    .stream(command, {
      cwd,
      env: { ...request.env, HOME: machine.home, [RUN_MARK]: runId },
      onStdout: (data) => take("stdout", data),
      onStderr: (data) => take("stderr", data),
    })
    .then(
      (code) => settle({ kind: "exit", code }),
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
        if (ended.kind === "error") throw ended.error;
        await killRun(machine, runId);
        // what the command printed before it was killed may still be on its way (a vendor's stream
        // can lag the command): it ends once the killed command's output is delivered
        await Promise.race([streamed, new Promise((resolve) => setTimeout(resolve, OUTPUT_DRAIN_MS))]);
        while (queue.length > 0) yield queue.shift() as CommandEvent;
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
    if (end.outcome === null) await killRun(machine, runId).catch(() => undefined);
  }
}

async function killRun(machine: SandboxMachine, runId: string): Promise<void> {
  await machine.exec(killRunScript(runId), { timeoutMs: 30_000 });
}
