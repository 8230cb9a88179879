import type { Duplex } from "node:stream";
import { exitCodeOf } from "@cubicle/host/docker-exec";
import { FrameDemuxer } from "@cubicle/host/docker-frames";
import type Docker from "dockerode";
import { SupervisorProblem } from "../../problems.ts";
import { dockerFailure, dockerStatus } from "./errors.ts";

/** Every exec runs as the computer's user, never as root. */
export const COMPUTER_USER = "1000:1000";

export interface StartedExec {
  exec: Docker.Exec;
  /** Docker's multiplexed stdout/stderr stream; see FrameDemuxer. */
  stream: Duplex;
}

export async function startExec(
  container: Docker.Container,
  cmd: string[],
  options: { env?: string[]; workingDir?: string; stdin?: boolean } = {},
): Promise<StartedExec> {
  const stdin = options.stdin ?? false;
  try {
    const exec = await container.exec({
      Cmd: cmd,
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: stdin,
      Tty: false,
      User: COMPUTER_USER,
      ...(options.env ? { Env: options.env } : {}),
      ...(options.workingDir ? { WorkingDir: options.workingDir } : {}),
    });
    const stream = await exec.start({ hijack: true, stdin });
    return { exec, stream };
  } catch (error) {
    // 409: the container stopped between the check and the exec
    if (dockerStatus(error) === 409) {
      throw new SupervisorProblem("COMPUTER_STOPPED", "the computer is not running", { cause: error });
    }
    throw dockerFailure("starting a process in the computer failed", error);
  }
}

/** The exit code once Docker has it (the host's, which the firewall runner uses too). */
export { exitCodeOf };

export interface Collected {
  code: number | null;
  stdout: Buffer;
  /** The last few KiB of stderr, for error messages. */
  stderr: string;
}

const STDERR_TAIL = 4_096;

/**
 * Runs a helper to completion and collects its output: stdout up to `maxStdoutBytes` (more fails
 * the call rather than growing memory), stderr's tail. `timeoutMs` is enforced inside the computer
 * (`timeout -s KILL`) and here, in case the engine itself stalls.
 */
export async function collectExec(
  container: Docker.Container,
  cmd: string[],
  options: { env?: string[]; timeoutMs?: number; maxStdoutBytes?: number } = {},
): Promise<Collected> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxStdout = options.maxStdoutBytes ?? 1024 * 1024;
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const { exec, stream } = await startExec(container, ["timeout", "-s", "KILL", String(seconds), ...cmd], {
    ...(options.env ? { env: options.env } : {}),
  });
  const demux = new FrameDemuxer();
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let stderr = "";
  let failure: SupervisorProblem | null = null;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      failure = new SupervisorProblem(
        "COMPUTER_FAILURE",
        `a helper inside the computer did not finish in ${seconds} s`,
      );
      stream.destroy();
    }, timeoutMs + 5_000);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    stream.on("data", (chunk: Buffer) => {
      for (const piece of demux.push(chunk)) {
        if (piece.stream === "stderr") {
          stderr = (stderr + piece.data.toString("utf8")).slice(-STDERR_TAIL);
          continue;
        }
        stdoutBytes += piece.data.length;
        if (stdoutBytes > maxStdout) {
          failure ??= new SupervisorProblem(
            "COMPUTER_FAILURE",
            `a helper inside the computer wrote more than ${maxStdout} bytes`,
          );
          stream.destroy();
          return;
        }
        stdout.push(Buffer.from(piece.data));
      }
    });
    stream.once("end", done);
    stream.once("close", done);
    stream.once("error", done);
  });
  if (failure) throw failure;
  return { code: await exitCodeOf(exec), stdout: Buffer.concat(stdout), stderr: stderr.trim() };
}

/** Runs a helper that must succeed (exit 0); its stdout as text. */
/**
 * What a program that failed in the computer should be reported as: when the computer itself
 * stopped under it (killed, crashed), COMPUTER_STOPPED, saying so, rather than the program's own
 * failure, whose detail ("listing screens failed") would name a step the caller never asked for.
 */
export async function programFailure(
  container: Docker.Container,
  what: string,
  failure: SupervisorProblem,
): Promise<SupervisorProblem> {
  const info = await container.inspect().catch(() => null);
  if (info?.State.Running) return failure;
  return new SupervisorProblem("COMPUTER_STOPPED", `the computer stopped during ${what}`, { cause: failure });
}

export async function checkedExec(
  container: Docker.Container,
  what: string,
  cmd: string[],
  options: { env?: string[]; timeoutMs?: number; maxStdoutBytes?: number } = {},
): Promise<string> {
  const result = await collectExec(container, cmd, options);
  if (result.code !== 0) {
    throw await programFailure(
      container,
      what,
      new SupervisorProblem(
        "COMPUTER_FAILURE",
        `${what} failed (exit ${result.code ?? "unknown"})${result.stderr ? `: ${result.stderr}` : ""}`,
      ),
    );
  }
  return result.stdout.toString("utf8");
}
