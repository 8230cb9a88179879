import { randomUUID } from "node:crypto";
import { FrameDemuxer } from "@cubicle/host/docker-frames";
import {
  type CommandEvent,
  DEFAULT_MAX_OUTPUT_BYTES,
  EXIT_ABORTED,
  EXIT_TIMED_OUT,
} from "@cubicle/providers/contract";
import type { ExecRequest } from "@cubicle/providers/supervisor-wire";
import type Docker from "dockerode";
import { OutputLimiter } from "../output.ts";
import { collectExec, exitCodeOf, startExec } from "./exec.ts";

/** Where a running command's process group id is kept inside the computer, so it can be killed. */
const GROUP_DIR = "/run/cubicle/exec";

/**
 * Runs inside the computer under `setsid -w`, so this shell leads a new session and process group
 * whose id is its pid: it records that id (and setsid's pid, see KILLER), then runs the command as
 * its child and reports its status. $1 the record's name, $2 the working directory, $3 the command.
 */
const WRAPPER = `mkdir -p ${GROUP_DIR} 2>/dev/null
echo "$PPID $$" > "${GROUP_DIR}/$1"
cd -- "$2" || exit 126
sh -c "$3"
code=$?
rm -f -- "${GROUP_DIR}/$1"
exit $code`;

/**
 * Kills the recorded group and everything else in its session (a job-control shell may have made
 * further groups), waiting briefly for the record when the command has only just started. setsid
 * goes first: it would otherwise complain on the command's stderr that its child was killed.
 */
const KILLER = `f="${GROUP_DIR}/$1"
i=0
while [ ! -s "$f" ] && [ $i -lt 60 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$f" ] || exit 0
read -r parent group < "$f"
case $group in ''|*[!0-9]*) exit 0 ;; esac
case $parent in ''|*[!0-9]*) ;; *)
  [ "$parent" -gt 1 ] && [ "$(cat "/proc/$parent/comm" 2>/dev/null)" = setsid ] && kill -KILL "$parent" 2>/dev/null ;;
esac
kill -KILL -- "-$group" 2>/dev/null
pkill -KILL -s "$group" 2>/dev/null
rm -f -- "$f"
exit 0`;

/** After the kill, how long output already on its way may still arrive before the stream is dropped. */
const DRAIN_AFTER_KILL_MS = 2_000;

export interface CommandStart {
  container: Docker.Container;
  /** The real working directory inside the computer, already checked to be a folder in the home. */
  cwd: string;
  request: ExecRequest;
  signal: AbortSignal;
}

/**
 * Starts the command and returns its events. The exec stream is read only as fast as the events are
 * consumed, so memory stays at a chunk or two; past the output cap the stream is still drained (the
 * command must not block on a full pipe) but nothing is kept. Timeout and abort kill the process
 * group inside the computer on their own, whether or not anyone is reading the events.
 */
export async function startCommand(start: CommandStart): Promise<AsyncGenerator<CommandEvent>> {
  const { container, cwd, request, signal } = start;
  const record = `${randomUUID()}.pgid`;
  const env = Object.entries(request.env ?? {}).map(([name, value]) => `${name}=${value}`);
  const { exec, stream } = await startExec(
    container,
    ["setsid", "-w", "sh", "-c", WRAPPER, "cubicle-exec", record, cwd, request.command],
    { env },
  );

  let reason: "timeout" | "abort" | null = null;
  let finished = false;
  let killing: Promise<unknown> = Promise.resolve();
  // wakes the read in progress; replaced on every read, so no settled chunk stays referenced
  let wake: (() => void) | null = null;
  const interrupt = (why: "timeout" | "abort") => {
    if (reason !== null || finished) return;
    reason = why;
    killing = collectExec(container, ["sh", "-c", KILLER, "cubicle-kill", record], {
      timeoutMs: 10_000,
    }).catch(() => undefined);
    wake?.();
  };
  const timer = setTimeout(() => interrupt("timeout"), request.timeoutMs);
  const onAbort = () => interrupt("abort");
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) interrupt("abort");

  async function* events(): AsyncGenerator<CommandEvent> {
    const limiter = new OutputLimiter(request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
    const demux = new FrameDemuxer();
    const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    let next: Promise<IteratorResult<Buffer>> | null = null;
    let drainUntil: number | null = null;
    // Not Promise.race against one long-lived promise: every race would leave a reaction on it
    // holding that race's result (an output chunk), so memory would grow with the output.
    const read = (pending: Promise<IteratorResult<Buffer>>) =>
      new Promise<IteratorResult<Buffer> | "interrupted" | "drained">((resolve, reject) => {
        let timer: NodeJS.Timeout | undefined;
        const settle = (value: IteratorResult<Buffer> | "interrupted" | "drained") => {
          clearTimeout(timer);
          wake = null;
          resolve(value);
        };
        pending.then(settle, (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        });
        if (drainUntil !== null) {
          timer = setTimeout(() => settle("drained"), Math.max(0, drainUntil - Date.now()));
        } else if (reason !== null) {
          settle("interrupted");
        } else {
          wake = () => settle("interrupted");
        }
      });
    try {
      for (;;) {
        next ??= chunks.next();
        const step = await read(next);
        if (step === "interrupted") {
          await killing;
          drainUntil = Date.now() + DRAIN_AFTER_KILL_MS;
          continue;
        }
        if (step === "drained") break;
        next = null;
        if (step.done) break;
        for (const piece of demux.push(step.value)) yield* limiter.write(piece.stream, piece.data);
      }
      finished = true;
      clearTimeout(timer);
      yield* limiter.flush();
      const truncated = limiter.truncated;
      if (reason === "timeout") {
        yield {
          type: "exit",
          code: EXIT_TIMED_OUT,
          message: `command timed out after ${request.timeoutMs} ms`,
          truncated,
        };
      } else if (reason === "abort") {
        yield { type: "exit", code: EXIT_ABORTED, message: "command aborted", truncated };
      } else {
        const code = await exitCodeOf(exec);
        if (code === null) {
          yield { type: "exit", code: 255, message: "the command's exit status was lost", truncated };
        } else {
          yield { type: "exit", code, truncated };
        }
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      // the reader left before the end: nothing of this command may keep running
      if (!finished) interrupt("abort");
      finished = true;
      stream.destroy();
    }
  }

  return events();
}
