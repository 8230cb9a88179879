import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { delimiter, join } from "node:path";

/** Commands get this PATH, never the service's own, so nothing the service installed privately leaks in. */
export const SAFE_PATH = "/usr/local/bin:/usr/bin:/bin";

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all. */
  error?: Error;
}

/** Absolute path of an executable on `pathValue`, or null. Resolved once so later spawns need no PATH. */
export function findOnPath(name: string, pathValue: string = process.env.PATH ?? ""): string | null {
  for (const dir of pathValue.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return null;
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    // a uid without a passwd entry (common in containers) has no name to report
    return String(process.getuid?.() ?? "");
  }
}

/**
 * The whole environment a computer's processes see, built from nothing: copying process.env
 * would hand DATABASE_URL, auth secrets and API keys to every command.
 */
export function computerEnvironment(home: string, display?: number): Record<string, string> {
  const user = currentUser();
  const env: Record<string, string> = {
    PATH: SAFE_PATH,
    HOME: home,
    USER: user,
    LOGNAME: user,
    LANG: "C.UTF-8",
    TERM: "xterm-256color",
  };
  if (display !== undefined) env.DISPLAY = `:${display}`;
  return env;
}

/** Signals the child's whole process group (children are spawned detached, so pgid = pid). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

export function isRunning(child: ChildProcess | null | undefined): child is ChildProcess {
  return child !== null && child !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Resolves once the child has exited (or failed to start); never rejects. */
export function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", (error) => {
      if (child.pid === undefined) resolve({ code: null, signal: null, error });
    });
  });
}

interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
}

/** Every process's state, parent and group from /proc; null where /proc cannot be read. */
function processTable(): ProcStat[] | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return null;
  }
  const table: ProcStat[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // the command name may contain spaces and parentheses, so fields are counted after the last ")"
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    table.push({
      pid: Number(entry),
      state: fields[0] ?? "",
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
    });
  }
  return table;
}

const live = (entry: ProcStat) => entry.state !== "Z" && entry.state !== "X";

/**
 * Whether any live process is still in the group. Zombies count as gone: an init that is slow to
 * reap (as in some containers) would otherwise keep a finished group "alive".
 */
export function groupAlive(pgid: number): boolean {
  const table = processTable();
  if (table) return table.some((entry) => entry.pgrp === pgid && live(entry));
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Kills a command's whole process group, deepest processes first while their parents (usually
 * shells waiting on them) are still alive to reap them. Killed all at once they would be orphaned
 * and linger as zombies, still answering `kill -0`, until init gets round to them. A few rounds
 * at most; then the rest of the group goes at once.
 */
export async function killCommandGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid;
  if (pgid === undefined) return;
  for (let round = 0; round < 3 && isRunning(child); round++) {
    const members = (processTable() ?? []).filter((entry) => entry.pgrp === pgid && live(entry));
    const leaves = members.filter(
      (entry) => entry.pid !== pgid && !members.some((other) => other.ppid === entry.pid),
    );
    if (leaves.length === 0) break;
    for (const leaf of leaves) {
      try {
        process.kill(leaf.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    // until each killed process is reaped by its parent (or orphaned: then only init can)
    const parents = new Set(members.map((entry) => entry.pid));
    const deadline = Date.now() + 150;
    const unreaped = () => {
      const table = processTable() ?? [];
      return leaves.some((leaf) =>
        table.some((entry) => entry.pid === leaf.pid && entry.ppid === leaf.ppid && parents.has(entry.ppid)),
      );
    };
    while (Date.now() < deadline && unreaped()) await pause(10);
  }
  killGroup(child);
}

/** Waits up to `ms` for the child to exit; SIGKILLs its group if it has not. */
export async function terminate(child: ChildProcess, ms = 2_000): Promise<Exit> {
  if (!isRunning(child)) return exitOf(child);
  killGroup(child, "SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  const result = await Promise.race([exitOf(child), late]);
  clearTimeout(timer);
  if (result !== "late") return result;
  killGroup(child, "SIGKILL");
  return exitOf(child);
}

export interface ToolResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs a short-lived helper (xdotool, import, x11vnc -storepasswd) to completion with a deadline.
 * `track` receives the child while it runs so stopping the machine can kill it.
 */
export async function runTool(
  file: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; timeoutMs: number; track?: Set<ChildProcess> },
): Promise<ToolResult> {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  options.track?.add(child);
  const out: Buffer[] = [];
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    // only the tail matters for an error message
    err = (err + chunk).slice(-4_096);
  });
  const timer = setTimeout(() => killGroup(child), options.timeoutMs);
  const closed = new Promise<void>((resolve) => {
    child.once("close", () => resolve());
    child.once("error", () => resolve());
  });
  const exit = await exitOf(child);
  if (!exit.error) await closed;
  clearTimeout(timer);
  options.track?.delete(child);
  if (exit.error) return { code: null, signal: null, stdout: Buffer.alloc(0), stderr: exit.error.message };
  return { code: exit.code, signal: exit.signal, stdout: Buffer.concat(out), stderr: err };
}

export function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exit code ${exit.code ?? "unknown"}`;
}
