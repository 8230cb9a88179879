/** Files in the sandbox read as streams, at the reader's pace. */
import type { Sandbox } from "./sandbox.ts";
import { SANDBOX_USER } from "./user.ts";

/** Follows a growing log until `done` exists and the log is read to its end (tail -f with an end). */
const FOLLOW = `my ($log, $done) = @ARGV;
open my $f, "<", $log or exit 3;
while (1) {
  my $n = sysread $f, my $b, 32768;
  if ($n) { syswrite STDOUT, $b; next }
  if (-e $done) { while (sysread $f, $b, 32768) { syswrite STDOUT, $b } last }
  select undef, undef, undef, 0.02;
}`;

/**
 * A file's bytes as the sandbox user reads them. With `follow`, the file is followed as it grows
 * until the file `follow` names exists; an abort stops the reader in the sandbox.
 */
export async function* readFile(
  sandbox: Sandbox,
  path: string,
  options: { follow?: string; signal?: AbortSignal } = {},
): AsyncGenerator<Buffer> {
  const argv = options.follow ? ["perl", "-e", FOLLOW, path, options.follow] : ["cat", "--", path];
  const reader = await sandbox.spawn({ argv, user: SANDBOX_USER.name, cwd: SANDBOX_USER.home });
  let finished = false;
  // a reader whose consumer left is stopped rather than left reading for nobody
  const stop = () => {
    if (finished) return;
    reader.detach();
    void sandbox.signal(reader.pid, "KILL").catch(() => undefined);
  };
  options.signal?.addEventListener("abort", stop, { once: true });
  try {
    for await (const piece of reader.output) if (piece.stream === "stdout") yield piece.data;
    finished = true;
    if (reader.exit()?.code !== 0) throw new Error(`reading ${path} failed`);
  } finally {
    options.signal?.removeEventListener("abort", stop);
    stop();
  }
}

/** Waits until `path` exists in the sandbox (or the wait is aborted); its contents. */
export async function waitForFile(sandbox: Sandbox, path: string, signal: AbortSignal): Promise<string> {
  const waiter = await sandbox.spawn({
    argv: [
      "perl",
      "-e",
      'select undef, undef, undef, 0.05 until -e $ARGV[0]; exec "cat", "--", $ARGV[0]',
      path,
    ],
    user: SANDBOX_USER.name,
    cwd: SANDBOX_USER.home,
  });
  const stop = () => {
    waiter.detach();
    void sandbox.signal(waiter.pid, "KILL").catch(() => undefined);
  };
  signal.addEventListener("abort", stop, { once: true });
  try {
    let text = "";
    for await (const piece of waiter.output)
      if (piece.stream === "stdout") text += piece.data.toString("utf8");
    if (signal.aborted) throw signal.reason;
    return text;
  } finally {
    signal.removeEventListener("abort", stop);
  }
}
