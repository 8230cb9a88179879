import { spawn } from "node:child_process";
import { constants } from "node:os";
import {
  type CommandEvent,
  type CommandRequest,
  EXIT_ABORTED,
  EXIT_TIMED_OUT,
  OUTPUT_TRUNCATED_MARKER,
  ProviderError,
} from "../contract/index.ts";
import { resolveDirectory } from "./files.ts";
import type { Machine } from "./machines.ts";
import { computerEnvironment, exitOf, groupAlive, killCommandGroup } from "./processes.ts";
import { ScreenManager } from "./screens.ts";

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** How often to look whether the group is empty while something outside it keeps our pipes open. */
const GROUP_POLL_MS = 100;
/** After the group is gone, how long buffered output may still arrive before the pipes are dropped. */
const DRAIN_GRACE_MS = 200;

type Stream = "stdout" | "stderr";

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Resolves when the pipes close, or when the process group has no live member left: a child that
 * escaped the group (setsid, a daemon) may hold the pipes for ever, and is not ours to wait for.
 */
async function outputDone(pgid: number, closed: Promise<unknown>): Promise<void> {
  let finished = false;
  const stop = closed.then(() => {
    finished = true;
  });
  while (!finished) {
    await Promise.race([stop, delay(GROUP_POLL_MS)]);
    if (!finished && !groupAlive(pgid)) {
      await Promise.race([stop, delay(DRAIN_GRACE_MS)]);
      return;
    }
  }
}

export async function* runCommand(machine: Machine, request: CommandRequest): AsyncGenerator<CommandEvent> {
  const cwd = request.cwd ? await resolveDirectory(machine.files, request.cwd) : machine.files.home;
  if (request.signal?.aborted) {
    yield { type: "exit", code: EXIT_ABORTED, message: "command aborted", truncated: false };
    return;
  }
  const maxOutput = request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const env = {
    ...computerEnvironment(machine.files.home, ScreenManager.displayOf(machine, 0)),
    ...request.env,
  };
  const child = spawn("/bin/sh", ["-c", request.command], {
    cwd,
    env,
    // its own process group, so a timeout or abort can kill everything it started
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  machine.groups.add(child);

  const pending: CommandEvent[] = [];
  let wake: (() => void) | null = null;
  const push = (event: CommandEvent) => {
    pending.push(event);
    wake?.();
    wake = null;
  };

  const decoders: Record<Stream, TextDecoder> = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  let used = 0;
  let truncated = false;
  const onData = (stream: Stream) => (chunk: Buffer) => {
    if (truncated) return; // keep draining so the process is never blocked on a full pipe
    const room = maxOutput - used;
    if (chunk.length <= room) {
      used += chunk.length;
      const text = decoders[stream].decode(chunk, { stream: true });
      if (text) push({ type: stream, data: text });
      return;
    }
    // cut on a character boundary so the kept part decodes cleanly
    let cut = room;
    while (cut > 0 && ((chunk[cut] ?? 0) & 0xc0) === 0x80) cut--;
    const text = decoders[stream].decode(chunk.subarray(0, cut), { stream: true });
    if (text) push({ type: stream, data: text });
    truncated = true;
    used = maxOutput;
    for (const name of ["stdout", "stderr"] as const) {
      const rest = decoders[name].decode();
      if (rest) push({ type: name, data: rest });
    }
    push({ type: "stdout", data: OUTPUT_TRUNCATED_MARKER });
  };
  child.stdout?.on("data", onData("stdout"));
  child.stderr?.on("data", onData("stderr"));

  let reason: "timeout" | "abort" | null = null;
  const timer = setTimeout(() => {
    reason ??= "timeout";
    void killCommandGroup(child);
  }, request.timeoutMs);
  const onAbort = () => {
    reason ??= "abort";
    void killCommandGroup(child);
  };
  request.signal?.addEventListener("abort", onAbort, { once: true });

  const stdoutClosed = new Promise<void>((resolve) => {
    if (!child.stdout || child.stdout.closed) resolve();
    else child.stdout.once("close", () => resolve());
  });
  const stderrClosed = new Promise<void>((resolve) => {
    if (!child.stderr || child.stderr.closed) resolve();
    else child.stderr.once("close", () => resolve());
  });

  // the group is finished with: killing "it" later could hit a process that reused its id
  let done = false;
  const finish = (async () => {
    const exit = await exitOf(child);
    if (exit.error) {
      throw new ProviderError("PROVIDER_FAILURE", `command could not be started: ${exit.error.message}`, {
        cause: exit.error,
      });
    }
    if (child.pid !== undefined) await outputDone(child.pid, Promise.all([stdoutClosed, stderrClosed]));
    // whatever still holds the pipes is outside the group; stop listening to it
    child.stdout?.destroy();
    child.stderr?.destroy();
    if (!truncated) {
      for (const name of ["stdout", "stderr"] as const) {
        const rest = decoders[name].decode();
        if (rest) push({ type: name, data: rest });
      }
    }
    done = true;
    clearTimeout(timer);
    if (reason === "timeout") {
      push({
        type: "exit",
        code: EXIT_TIMED_OUT,
        message: `command timed out after ${request.timeoutMs} ms`,
        truncated,
      });
    } else if (reason === "abort") {
      push({ type: "exit", code: EXIT_ABORTED, message: "command aborted", truncated });
    } else if (exit.code !== null) {
      push({ type: "exit", code: exit.code, truncated });
    } else {
      const signo = exit.signal ? constants.signals[exit.signal] : undefined;
      push({
        type: "exit",
        code: 128 + (signo ?? 0),
        message: `killed by ${exit.signal ?? "a signal"}`,
        truncated,
      });
    }
  })();
  let failure: unknown = null;
  finish.catch((error: unknown) => {
    failure = error;
    wake?.();
    wake = null;
  });

  try {
    for (;;) {
      for (const event of pending.splice(0)) {
        yield event;
        if (event.type === "exit") return;
      }
      if (failure) throw failure;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
    // the caller stopped listening early: nothing of this command may keep running
    if (!done) void killCommandGroup(child);
    machine.groups.delete(child);
  }
}
