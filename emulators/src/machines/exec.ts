import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { bounded, ENGINE_CALL_MS, machineError } from "./engine.ts";
import { type ExitStatus, ProcessOutput } from "./output.ts";

export interface ProcessSpec {
  argv: string[];
  /** A user name or uid[:gid] known inside the container. */
  user: string;
  /** Added to (and overriding) the container's environment. */
  env?: Record<string, string>;
  cwd: string;
  /** Whether the process reads a stdin the caller writes; otherwise its stdin is /dev/null. */
  stdin?: boolean;
}

export interface ContainerProcess {
  /** The pid inside the container: the one `kill <pid>` in the container signals. */
  pid: number;
  /** Its stdout and stderr; they end once it has exited and all it wrote has been read. */
  output: ProcessOutput;
  /** The process's stdin when it was asked for; end() closes it. */
  stdin: Duplex | null;
  /** How it ended, once the output has ended; null when the connection broke off first. */
  exit(): ExitStatus | null;
  /** Drops the connection to the process; the process itself carries on. */
  detach(): void;
}

/** The requested working directory does not exist in the container. */
export class WorkingDirMissing extends Error {
  constructor(readonly cwd: string) {
    super(`cwd '${cwd}' does not exist`);
    this.name = "WorkingDirMissing";
  }
}

/**
 * The parent of every process, inside the container. The engine closes an exec's streams two
 * seconds after its process exits, dropping whatever output a slow reader had not taken yet, and
 * keeps them open while a background child of it holds them. So the exec'd process is this parent:
 * it forks the command (whose pid it tells first, before the command may write), waits for it, then
 * writes an end marker with the exact status on stdout and stderr, and stays until the emulator has
 * read up to the markers and lets it go by closing the connection (its stdin). A command that had
 * the stdin and saw it closed before it ended leaves its parent no such wait: its last output is
 * then read within the engine's grace, as a plain exec's would be.
 * $1 working directory, $2 marker nonce, $3 "stdin" or "null", then the command.
 */
const PARENT = `use strict; use warnings; use POSIX ();
my ($cwd, $nonce, $mode) = splice @ARGV, 0, 3;
chdir $cwd or do { syswrite STDOUT, "cwd-missing\\n"; exit 1 };
pipe my $gate, my $open or die "pipe: $!";
my $pid = fork // die "fork: $!";
if ($pid == 0) {
  close $open; sysread $gate, my $byte, 1; close $gate;
  if ($mode ne "stdin") { open STDIN, "<", "/dev/null" or POSIX::_exit(126) }
  { no warnings "exec"; exec { $ARGV[0] } @ARGV }
  syswrite STDERR, "$ARGV[0]: $!\\n"; POSIX::_exit($!{ENOENT} ? 127 : 126);
}
close $gate;
syswrite STDOUT, "pid $pid\\n";
close $open;
waitpid $pid, 0;
my $end = $? & 127 ? "signal " . ($? & 127) : "exit " . ($? >> 8);
syswrite STDOUT, "\\0e2b-exit-$nonce $end\\n";
syswrite STDERR, "\\0e2b-exit-$nonce\\n";
1 while sysread STDIN, my $buffer, 4096;
POSIX::_exit(0);`;

/** Starts `spec` in the container and returns once its pid is known. */
export async function spawnProcess(
  container: Docker.Container,
  spec: ProcessSpec,
): Promise<ContainerProcess> {
  const stdin = spec.stdin ?? false;
  const nonce = randomBytes(12).toString("hex");
  let exec: Docker.Exec;
  try {
    exec = await bounded((options) =>
      container.exec({
        Cmd: ["perl", "-e", PARENT, spec.cwd, nonce, stdin ? "stdin" : "null", ...spec.argv],
        AttachStdout: true,
        AttachStderr: true,
        AttachStdin: true,
        Tty: false,
        User: spec.user,
        Env: Object.entries(spec.env ?? {}).map(([name, value]) => `${name}=${value}`),
        ...options,
      }),
    );
  } catch (error) {
    throw machineError(container.id, error);
  }
  const socket = await startExec(container, exec);
  // once every byte up to the markers is read, closing the connection lets the parent go
  const output = new ProcessOutput(socket, Buffer.from(`\0e2b-exit-${nonce}`), () => socket.destroy());
  const first = await output.line();
  const [word, pid] = (first ?? "").split(" ");
  if (word !== "pid" || !Number.isInteger(Number(pid))) {
    socket.destroy();
    if (first === "cwd-missing") throw new WorkingDirMissing(spec.cwd);
    throw new Error(`the process did not start in container ${container.id.slice(0, 12)}`);
  }
  return {
    pid: Number(pid),
    output,
    stdin: stdin ? socket : null,
    exit: () => output.exit,
    detach: () => socket.destroy(),
  };
}

/** Attaches to the exec; bounded, as the engine may hang on a container it is busy freezing. */
async function startExec(container: Docker.Container, exec: Docker.Exec): Promise<Duplex> {
  const started = exec.start({ hijack: true, stdin: true }) as Promise<Duplex>;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("the engine did not start the exec in time")), ENGINE_CALL_MS);
  });
  try {
    return await Promise.race([started, timedOut]);
  } catch (error) {
    started.then((socket) => socket.destroy()).catch(() => undefined);
    throw machineError(container.id, error);
  } finally {
    clearTimeout(timer);
  }
}
