import { readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, isAbsolute, resolve, sep } from "node:path";
import { BROWSER_CLOSE_GRACE_MS, BROWSER_SETTLE_MS } from "../contract/index.ts";

/**
 * A desktop computer's browsers are host processes: Chromium browser processes of this service's
 * user (commands run as it) whose profile is inside the machine's home — given with
 * `--user-data-dir=`, or, without it, the default profile under `$HOME`. Nothing restarts them, so a
 * closed browser stays closed.
 */

/** Chromium builds by program name (process names are cut to 15 characters). */
const CHROMIUM =
  /^(chromium|chromium-browser?|chrome|google-chrome(-stable)?|headless_shell|chrome-headless(-shell)?)$/;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function procText(pid: number, file: string): string | null {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return null;
  }
}

/** The real path, or the plain resolved one for a folder that is gone. */
function realOrResolved(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

const inside = (path: string, home: string) => path === home || path.startsWith(home + sep);

/** The folder the process keeps its profile in, when it is a Chromium browser process. */
function profileOf(pid: number): string | null {
  const cmdline = procText(pid, "cmdline");
  // gone, a zombie or a kernel thread
  if (!cmdline) return null;
  // Helpers (renderers, GPU, zygotes: `--type=…`) go with their browser. They rewrite their command
  // line into one space-separated string, hence the second test.
  const args = cmdline.split("\0").filter((arg) => arg !== "");
  if (args.some((arg) => arg.startsWith("--type=")) || cmdline.includes(" --type=")) return null;
  const relativeTo = (path: string) => {
    if (isAbsolute(path)) return realOrResolved(path);
    try {
      return realOrResolved(resolve(readlinkSync(`/proc/${pid}/cwd`), path));
    } catch {
      return null;
    }
  };
  const flag = args.findLast((arg) => arg.startsWith("--user-data-dir="));
  if (flag) return relativeTo(flag.slice("--user-data-dir=".length));
  const name = (procText(pid, "comm") ?? "").trim();
  if (!CHROMIUM.test(name) && !CHROMIUM.test(basename(args[0] ?? ""))) return null;
  // without the flag Chromium keeps its profile under $HOME (~/.config/chromium and the like)
  const home = (procText(pid, "environ") ?? "")
    .split("\0")
    .find((variable) => variable.startsWith("HOME="))
    ?.slice("HOME=".length);
  return home ? relativeTo(home) : null;
}

/** The pids of the browser processes whose profile is inside `home` (a real path). */
export function browsersIn(home: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      // only this service's own processes: the computer's commands all run as its user
      if (uid !== undefined && statSync(`/proc/${entry}`).uid !== uid) continue;
    } catch {
      continue;
    }
    const profile = profileOf(pid);
    if (profile !== null && inside(profile, home)) pids.push(pid);
  }
  return pids;
}

/** Running, not a zombie waiting to be reaped (that one has exited). */
function running(pid: number): boolean {
  const stat = procText(pid, "stat");
  if (stat === null) return false;
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state !== "Z" && state !== "X";
}

function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // gone already
    }
  }
}

async function allGone(pids: number[], withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (!pids.some(running)) return true;
    if (Date.now() >= deadline) return false;
    await pause(100);
  }
}

/**
 * Waits until the machine's browsers have written out what they keep in memory: BROWSER_SETTLE_MS
 * while one runs (Chromium cannot be asked to flush its cookies), no time at all when none does.
 */
export async function settleBrowsers(home: string): Promise<void> {
  if (browsersIn(home).length > 0) await pause(BROWSER_SETTLE_MS);
}

/**
 * Closes the machine's browsers: settled first (on SIGTERM Chromium ends as for a logout and drops
 * the cookies it has not written yet; host browsers may have no screen whose windows could be
 * closed instead), then SIGTERM so it writes the rest of its profile and exits, SIGKILL for any
 * still running BROWSER_CLOSE_GRACE_MS later. Resolves once they are gone.
 */
export async function closeBrowsers(home: string): Promise<void> {
  if (browsersIn(home).length === 0) return;
  await settleBrowsers(home);
  const pids = browsersIn(home);
  // Chromium's helpers (the network service among them) may not name the profile on their command
  // line, yet write into it; the browser is closed only once they are gone too.
  const tree = withDescendants(pids);
  signal(pids, "SIGTERM");
  if (await allGone(tree, BROWSER_CLOSE_GRACE_MS)) return;
  signal(tree.filter(running), "SIGKILL");
  await allGone(tree, 5_000);
}

/** `pids` and every process descended from them. */
function withDescendants(pids: number[]): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procText(Number(entry), "stat");
    if (stat === null) continue;
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const tree = new Set(pids);
  for (const pid of tree) for (const child of children.get(pid) ?? []) tree.add(child);
  return [...tree];
}
