import type Docker from "dockerode";

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The exit code of a Docker exec once Docker has it. The output stream can close a moment before
 * Docker records the exit, so this looks again for a short while; null when it never does.
 */
export async function exitCodeOf(exec: Docker.Exec, waitMs = 3_000): Promise<number | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const info = await exec.inspect().catch(() => null);
    if (info && !info.Running && info.ExitCode !== null) return info.ExitCode;
    if (Date.now() > deadline) return null;
    await pause(50);
  }
}
