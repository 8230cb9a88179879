import type { ContainerProcess, ProcessSpec } from "./exec.ts";

type Spawn = (spec: ProcessSpec) => Promise<ContainerProcess>;

export interface Finished {
  /** The exit code; null when a signal killed the helper. */
  code: number | null;
  stdout: Buffer;
  /** The last few KiB of stderr, for messages. */
  stderr: string;
}

const STDERR_TAIL = 4_096;

/** More stdout than a helper may print: its output is cut and the run fails. */
export class OutputTooLarge extends Error {
  constructor(limit: number) {
    super(`a helper printed more than ${limit} bytes`);
    this.name = "OutputTooLarge";
  }
}

/**
 * Runs a short helper to the end and collects its output. `timeoutMs` is enforced inside the
 * container (`timeout -s KILL`), so a stuck helper dies rather than lingering; stdout past
 * `maxStdoutBytes` fails the run instead of growing memory.
 */
export async function runToEnd(
  spawn: Spawn,
  spec: Omit<ProcessSpec, "stdin">,
  options: { timeoutMs?: number; maxStdoutBytes?: number } = {},
): Promise<Finished> {
  const seconds = Math.max(1, Math.ceil((options.timeoutMs ?? 30_000) / 1000));
  const maxStdout = options.maxStdoutBytes ?? 16 * 1024 * 1024;
  const process = await spawn({
    ...spec,
    argv: ["timeout", "-s", "KILL", String(seconds), ...spec.argv],
  });
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let stderr = "";
  for await (const piece of process.output) {
    if (piece.stream === "stderr") {
      stderr = (stderr + piece.data.toString("utf8")).slice(-STDERR_TAIL);
      continue;
    }
    stdoutBytes += piece.data.length;
    if (stdoutBytes > maxStdout) {
      process.detach();
      throw new OutputTooLarge(maxStdout);
    }
    stdout.push(Buffer.from(piece.data));
  }
  const exit = process.exit();
  if (!exit) throw new Error("the connection to a helper in the container broke");
  return { code: exit.code, stdout: Buffer.concat(stdout), stderr: stderr.trim() };
}

/** Sends `signal` (e.g. "KILL") to `pid` inside the container; false when there is no such process. */
export async function signalProcess(spawn: Spawn, pid: number, signal: string): Promise<boolean> {
  const result = await runToEnd(spawn, {
    argv: ["kill", "-s", signal, String(pid)],
    user: "root",
    cwd: "/",
  });
  return result.code === 0;
}
