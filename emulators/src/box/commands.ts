/**
 * `POST /boxes/{id}/commands` and `GET /boxes/{id}/commands/{processId}`: `bash -c` as the box's
 * user. A sync command's output comes back in the answer (each stream cut at 1 MiB); a detached
 * one is handed to a small daemon in the box that writes its logs and, when it ends, its status to
 * ~/.ascii/processes/, which the status call reads. The box's disk is the process table, so the
 * status of a command an earlier emulator started is known too, and a command of an earlier boot
 * of the box is `lost`.
 */
import { constants } from "node:os";
import { posix } from "node:path";
import { WorkingDirMissing } from "../machines/index.ts";
import { BOX_USER, type Box } from "./box.ts";
import { BoxError, badRequest } from "./errors.ts";

/** Box caps each stream of a sync command's answer at 1 MiB. */
export const OUTPUT_CAP = 1024 * 1024;
const DEFAULT_TIMEOUT_SECONDS = 30;
const MAX_TIMEOUT_SECONDS = 600;
const DEFAULT_TAIL_BYTES = 65_536;
const MAX_TAIL_BYTES = 524_288;
const PROCESSES = `${BOX_USER.home}/.ascii/processes`;

const SIGNALS = new Map(Object.entries(constants.signals).map(([name, number]) => [number as number, name]));
const signalName = (number: number) => SIGNALS.get(number) ?? `SIG${number}`;

/**
 * Starts a detached command: claims the first free process id from $2 on (its `.json` made
 * exclusively), forks a daemon in a session of its own that runs the command with its logs as
 * stdout and stderr, waits for it and writes `<id>.exit` ("exit N" or "signal N", then the time in
 * ms). Prints the id and the command's pid once the metadata is written.
 * $1 folder, $2 first id to try, $3 metadata (JSON), $4 the command.
 */
const LAUNCH = `use strict; use warnings; use POSIX (); use JSON::PP (); use Time::HiRes ();
my ($dir, $id, $meta, $command) = @ARGV;
system("mkdir", "-p", "--", $dir) == 0 or die "cannot make $dir\\n";
my $info;
until (sysopen $info, "$dir/$id.json", POSIX::O_WRONLY | POSIX::O_CREAT | POSIX::O_EXCL, 0644) {
  $!{EEXIST} or die "$dir/$id.json: $!\\n";
  $id++;
}
my $exit = "$dir/$id.exit";
pipe my $told, my $tell or die "pipe: $!";
my $daemon = fork // die "fork: $!";
if ($daemon == 0) {
  close $told;
  POSIX::setsid();
  open STDIN, "<", "/dev/null";
  open STDOUT, ">", "$dir/$id.log" or POSIX::_exit(1);
  open STDERR, ">", "$dir/$id.err.log" or POSIX::_exit(1);
  my $child = fork // POSIX::_exit(1);
  if ($child == 0) {
    close $tell;
    delete $ENV{DISPLAY};
    { no warnings "exec"; exec "bash", "-c", $command }
    POSIX::_exit(127);
  }
  syswrite $tell, "$child\\n";
  close $tell;
  waitpid $child, 0;
  my $end = $? & 127 ? "signal " . ($? & 127) : "exit " . ($? >> 8);
  if (open my $f, ">", "$exit.tmp") {
    print $f "$end " . int(Time::HiRes::time() * 1000) . "\\n";
    close $f;
    rename "$exit.tmp", $exit;
  }
  POSIX::_exit(0);
}
close $tell;
my $pid = <$told> // die "the command did not start\\n";
chomp $pid;
my $record = JSON::PP::decode_json($meta);
@$record{qw(processId pid daemonPid)} = ($id + 0, $pid + 0, $daemon + 0);
print $info JSON::PP::encode_json($record);
close $info;
print "$id $pid\\n";`;

/**
 * A detached command's status: "missing", or "found <daemon alive 0|1>", its metadata, its exit
 * line (or "none"), then per log "<bytes sent> <size>" and the last $3 bytes of each log.
 * $1 folder, $2 id, $3 tail bytes.
 */
const STATUS = `use strict; use warnings;
my ($dir, $id, $tail) = @ARGV;
open my $m, "<", "$dir/$id.json" or do { print "missing\\n"; exit 0 };
my $meta = do { local $/; <$m> } // "";
close $m;
$meta =~ s/\\n//g;
my $exit = "none";
if (open my $e, "<", "$dir/$id.exit") { $exit = <$e> // "none"; chomp $exit; close $e }
my ($daemon) = $meta =~ /"daemonPid":(\\d+)/;
my $alive = $daemon && kill(0, $daemon) ? 1 : 0;
my @logs;
for my $name ("$dir/$id.log", "$dir/$id.err.log") {
  my ($data, $size) = ("", 0);
  if (open my $f, "<:raw", $name) {
    $size = -s $f;
    seek $f, ($size > $tail ? $size - $tail : 0), 0;
    read $f, $data, $tail;
    close $f;
  }
  push @logs, [length $data, $size, $data];
}
print "found $alive\\n$meta\\n$exit\\n";
print "$_->[0] $_->[1]\\n" for @logs;
print $_->[2] for @logs;`;

function integer(value: unknown): number | null {
  return typeof value === "number" && Number.isInteger(value) ? value : null;
}

function workingDir(value: unknown): string {
  if (value === undefined || value === null || value === "") return BOX_USER.home;
  if (typeof value !== "string" || value.includes("\0"))
    throw badRequest("invalid_cwd", "cwd must be a path.");
  return posix.resolve(BOX_USER.home, value);
}

const cwdMissing = (cwd: string) => badRequest("invalid_cwd", `Working directory ${cwd} does not exist.`);

export async function runCommand(box: Box, body: Record<string, unknown>) {
  const command = body.command;
  if (typeof command !== "string" || command.trim() === "") {
    throw badRequest("invalid_command", "command must be a non-empty string.");
  }
  const timeout = body.timeoutSeconds === undefined ? DEFAULT_TIMEOUT_SECONDS : integer(body.timeoutSeconds);
  if (timeout === null || timeout < 1 || timeout > MAX_TIMEOUT_SECONDS) {
    throw badRequest(
      "invalid_timeout",
      `timeoutSeconds must be an integer from 1 to ${MAX_TIMEOUT_SECONDS}.`,
    );
  }
  const cwd = workingDir(body.cwd);
  return body.detached === true ? startDetached(box, command, cwd) : runSync(box, command, cwd, timeout);
}

/** A stream's first OUTPUT_CAP bytes; what comes after is read and dropped, so the command never blocks. */
class Capped {
  private readonly chunks: Buffer[] = [];
  private length = 0;
  truncated = false;

  push(data: Buffer): void {
    const room = OUTPUT_CAP - this.length;
    if (data.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = Buffer.from(data.subarray(0, room));
    this.chunks.push(kept);
    this.length += kept.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

async function runSync(box: Box, command: string, cwd: string, timeoutSeconds: number) {
  const startedAt = new Date();
  let process: Awaited<ReturnType<Box["spawn"]>>;
  try {
    // setsid: the command leads a process group, so a timeout kills everything it started
    process = await box.spawn({
      argv: ["setsid", "env", "-u", "DISPLAY", "bash", "-c", command],
      user: BOX_USER.name,
      cwd,
      env: box.commandEnv(),
    });
  } catch (error) {
    throw error instanceof WorkingDirMissing ? cwdMissing(cwd) : error;
  }
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    box
      .run({ argv: ["kill", "-KILL", "--", `-${process.pid}`], user: "root", cwd: "/" })
      .catch(() => undefined);
  }, timeoutSeconds * 1000);
  const streams = { stdout: new Capped(), stderr: new Capped() };
  try {
    for await (const piece of process.output) streams[piece.stream].push(piece.data);
  } finally {
    clearTimeout(timer);
  }
  const exit = process.exit();
  if (!exit)
    throw new BoxError(502, "box_direct_failed", "The connection to the command broke; it may still run.");
  return {
    ok: true,
    type: "command.finished",
    success: exit.code === 0,
    exitCode: exit.code,
    signal: exit.signal === null ? null : signalName(exit.signal),
    stdout: streams.stdout.text(),
    stderr: streams.stderr.text(),
    stdoutTruncated: streams.stdout.truncated,
    stderrTruncated: streams.stderr.truncated,
    timedOut,
    cwd,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
  };
}

const logPaths = (processId: number) => ({
  logPath: `${PROCESSES}/${processId}.log`,
  errLogPath: `${PROCESSES}/${processId}.err.log`,
});

async function startDetached(box: Box, command: string, cwd: string) {
  const startedAt = new Date().toISOString();
  const meta = JSON.stringify({ command, cwd, startedAt, boot: box.startedAt?.toISOString() ?? null });
  let result: Awaited<ReturnType<Box["run"]>>;
  try {
    result = await box.run({
      argv: ["perl", "-e", LAUNCH, PROCESSES, String(box.nextProcessId), meta, command],
      user: BOX_USER.name,
      cwd,
      env: box.commandEnv(),
    });
  } catch (error) {
    throw error instanceof WorkingDirMissing ? cwdMissing(cwd) : error;
  }
  const [id, pid] = result.stdout.toString("utf8").trim().split(" ").map(Number);
  if (result.code !== 0 || !Number.isInteger(id) || !Number.isInteger(pid)) {
    throw new BoxError(502, "box_direct_failed", result.stderr || "The command did not start.");
  }
  box.nextProcessId = (id ?? 0) + 1;
  return {
    ok: true,
    type: "command.started",
    success: true,
    processId: id,
    pid,
    command,
    cwd,
    startedAt,
    ...logPaths(id ?? 0),
  };
}

/** The first `count` lines of `data` (latin1), and the bytes after them. */
function lines(data: Buffer, count: number): [string[], Buffer] {
  const found: string[] = [];
  let rest = data;
  while (found.length < count) {
    const newline = rest.indexOf(10);
    if (newline === -1) break;
    found.push(rest.subarray(0, newline).toString("latin1"));
    rest = rest.subarray(newline + 1);
  }
  return [found, rest];
}

const processNotFound = (id: string) => new BoxError(404, "process_not_found", `Process ${id} not found.`);

export async function commandStatus(box: Box, processId: string, query: Record<string, string>) {
  if (!/^[1-9]\d{0,15}$/.test(processId)) throw processNotFound(processId);
  const tailText = query.tailBytes;
  const tail =
    tailText === undefined ? DEFAULT_TAIL_BYTES : /^\d{1,7}$/.test(tailText) ? Number(tailText) : 0;
  if (tail < 1 || tail > MAX_TAIL_BYTES) {
    throw badRequest("invalid_tail_bytes", `tailBytes must be an integer from 1 to ${MAX_TAIL_BYTES}.`);
  }
  const result = await box.run(
    { argv: ["perl", "-e", STATUS, PROCESSES, processId, String(tail)], user: BOX_USER.name, cwd: "/" },
    { maxStdoutBytes: 2 * MAX_TAIL_BYTES + 64 * 1024 },
  );
  if (result.code !== 0) throw new BoxError(502, "box_direct_failed", result.stderr || "status failed");
  const [[found = "", metaText = "{}", exitText = "none", outHead = "", errHead = ""], rest] = lines(
    result.stdout,
    5,
  );
  if (!found.startsWith("found ")) throw processNotFound(processId);
  const alive = found === "found 1";
  const meta = JSON.parse(Buffer.from(metaText, "latin1").toString("utf8")) as {
    pid?: number;
    command?: string;
    cwd?: string;
    startedAt?: string;
    boot?: string | null;
  };
  const [outSent = 0, outSize = 0] = outHead.split(" ").map(Number);
  const [errSent = 0, errSize = 0] = errHead.split(" ").map(Number);
  const [kind, value, at] = exitText.split(" ");
  const ended = kind === "exit" || kind === "signal";
  const thisBoot = meta.boot === (box.startedAt?.toISOString() ?? null);
  const status = !thisBoot ? "lost" : ended ? "exited" : alive ? "running" : "lost";
  const exitCode = ended && kind === "exit" ? Number(value) : null;
  return {
    ok: true,
    type: "command.status",
    success: status === "running" || (status === "exited" && exitCode === 0),
    processId: Number(processId),
    pid: meta.pid ?? null,
    status,
    known: status !== "lost",
    running: status === "running",
    exitCode,
    signal: ended && kind === "signal" ? signalName(Number(value)) : null,
    command: meta.command ?? null,
    cwd: meta.cwd ?? null,
    stdout: rest.subarray(0, outSent).toString("utf8"),
    stderr: rest.subarray(outSent, outSent + errSent).toString("utf8"),
    stdoutTruncated: outSize > outSent,
    stderrTruncated: errSize > errSent,
    ...logPaths(Number(processId)),
    startedAt: meta.startedAt ?? null,
    finishedAt: ended && at ? new Date(Number(at)).toISOString() : null,
  };
}
