/**
 * The bench's child processes: the desktop (Xvfb, x11vnc, a churning xterm), websockify, api and
 * the proxy. Each runs in its own process group, so websockify's per-connection children go with it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import type { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

// Generous: on a busy machine PGlite alone can take a quarter of a minute to start.
const STARTUP_TIMEOUT_MS = 60_000;
const running = new Set<ChildProcess>();

// Last resort (an exception past every finally, process.exit): nothing may outlive the bench.
process.once("exit", () => {
  for (const child of running) killGroup(child, "SIGKILL");
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

export function startChild(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; extraPipes?: number } = {},
): ChildProcess {
  const extra = Array.from({ length: options.extraPipes ?? 0 }, () => "pipe" as const);
  const child = spawn(command, args, {
    detached: true,
    env: options.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe", ...extra],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  // Undrained pipes would eventually block a chatty child.
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}

/** SIGTERM to every group, SIGKILL to what is left after five seconds. */
export async function stopAll(): Promise<void> {
  const children = [...running];
  const exited = children.map((child) => once(child, "exit"));
  for (const child of children) killGroup(child, "SIGTERM");
  const timer = setTimeout(() => {
    for (const child of children) killGroup(child, "SIGKILL");
  }, 5_000);
  await Promise.all(exited);
  clearTimeout(timer);
  // A leader can go before the rest of its group (websockify before its handlers).
  for (const child of children) killGroup(child, "SIGKILL");
}

/** Resolves with the first capture of `pattern` in `output`; rejects if the child exits first. */
export function waitForOutput(
  child: ChildProcess,
  output: Readable | null | undefined,
  pattern: RegExp,
  name: string,
): Promise<string> {
  if (!output) return Promise.reject(new Error(`${name} has no output to watch`));
  let seen = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`${name} did not start in time`), STARTUP_TIMEOUT_MS);
    const fail = (message: string) => {
      clearTimeout(timer);
      reject(new Error(`${message}; its output: ${seen.slice(-2000)}`));
    };
    child.once("exit", (code) => fail(`${name} exited with ${code}`));
    child.once("error", (error) => fail(`${name}: ${error.message}`));
    output.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
}

export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

export interface Desktop {
  display: string;
  /** x11vnc's port on 127.0.0.1; no password (security type None). */
  port: number;
}

/** Xvfb as screen-start starts it in the computer image: 1280x800, 24 bits; returns its display. */
export async function startDisplay(): Promise<string> {
  const xvfb = startChild("Xvfb", ["-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], {
    extraPipes: 1,
  });
  return `:${await waitForOutput(xvfb, xvfb.stdio[3] as Readable, /^(\d+)\n/, "Xvfb")}`;
}

/**
 * Xvfb at a Docker computer's geometry, x11vnc without a password (the bench's RFB client speaks
 * only security type None), and an xterm scrolling random text so every update carries new pixels.
 */
export async function startDesktop(): Promise<Desktop> {
  const display = await startDisplay();
  const env = { ...process.env, DISPLAY: display };

  const port = await freePort();
  // x11vnc paces its answers: it naps when little changes, sleeps up to 1.5 s when screen polls
  // "bog down" (as under a scrolling terminal), polls every -wait ms and holds updates back for
  // -defer ms (20 each by default; here only its first client ever escaped them), and, unless
  // -speeds gives it the link's speeds (read MB/s, bandwidth KB/s, latency ms), stalls each client
  // once for about 4 s a few seconds in while it estimates them. Left so, that pacing would be all
  // any path measured.
  const x11vnc = startChild(
    "x11vnc",
    [
      ...["-display", display, "-rfbport", String(port), "-localhost", "-shared", "-forever", "-nopw"],
      ...["-nonap", "-nowait_bog", "-wait", "1", "-defer", "0", "-speeds", "3000,1000000,1"],
    ],
    { env },
  );
  const listening = Number(await waitForOutput(x11vnc, x11vnc.stdout, /^PORT=(\d+)$/m, "x11vnc"));
  if (listening !== port) throw new Error(`x11vnc listens on ${listening}, not ${port}`);

  // The pause keeps the churn from starving the processes being measured on a small machine.
  const churn = "while :; do head -c 6000 /dev/urandom | base64 -w 200; sleep 0.05; done";
  startChild("xterm", ["-geometry", "200x60+0+0", "-e", "sh", "-c", churn], { env });
  return { display, port };
}

/**
 * Debian's websockify. By default it forks a handler process per connection; `threads` runs it with
 * --libserver instead (one process, a thread per connection).
 */
export async function startWebsockify(
  vncPort: number,
  options: { threads?: boolean } = {},
): Promise<{ pid: number; port: number }> {
  const port = await freePort();
  const child = startChild("websockify", [
    ...(options.threads ? ["--libserver"] : []),
    `127.0.0.1:${port}`,
    `127.0.0.1:${vncPort}`,
  ]);
  await waitForListening(child, port, "websockify");
  return { pid: child.pid as number, port };
}

async function waitForListening(child: ChildProcess, port: number, name: string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    const socket = connect(port, "127.0.0.1");
    const listening = await new Promise<boolean>((resolve) => {
      socket.once("connect", () => resolve(true));
      socket.once("error", () => resolve(false));
    });
    socket.destroy();
    if (listening) return;
    if (Date.now() > deadline) throw new Error(`${name} did not listen in time`);
    await sleep(100);
  }
}

const script = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export async function startApiProcess(capabilityKey: string): Promise<{ url: string }> {
  const child = startChild("node", ["--import", "tsx", script("./api.ts")], {
    env: { ...process.env, PORT: String(await freePort()), SCREEN_CAPABILITY_KEY: capabilityKey },
  });
  return { url: await waitForOutput(child, child.stdout, /^API_URL=(\S+)$/m, "api") };
}

/** The Cubicle proxy on its own, so that its memory is measured apart from everything else; `nodeArgs` go to its node. */
export async function startProxyProcess(
  env: Record<string, string>,
  nodeArgs: readonly string[] = [],
): Promise<{ pid: number; port: number }> {
  const port = await freePort();
  const child = startChild("node", [...nodeArgs, "--import", "tsx", script("../../proxy/src/main.ts")], {
    env: { ...process.env, ...env, PROXY_PORT: String(port), LOG_LEVEL: "silent" },
  });
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  // Ready once it follows api's control lease stream, as a replica in production would be.
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the proxy exited with ${child.exitCode}`);
    const health = await fetch(`http://127.0.0.1:${port}/health`)
      .then((response) => response.json() as Promise<{ controlLeases?: string }>)
      .catch(() => undefined);
    if (health?.controlLeases === "followed") return { pid: child.pid as number, port };
    if (Date.now() > deadline) throw new Error("the proxy did not become ready in time");
    await sleep(100);
  }
}

export interface TreeMemory {
  processes: number;
  /** Sum of VmRSS: counts pages shared between forked processes once per process. */
  rssKiB: number;
  /** Sum of proportional set sizes: shared pages split between their sharers. */
  pssKiB: number;
}

/** Memory of `pid`, and of all its descendants unless `alone`, from /proc. */
export function treeMemory(pid: number, options: { alone?: boolean } = {}): TreeMemory {
  const pids = [pid];
  for (let i = 0; i < pids.length && !options.alone; i++) {
    const current = pids[i] as number;
    for (const task of safe(() => readdirSync(`/proc/${current}/task`), [])) {
      const children = procFile(`/proc/${current}/task/${task}/children`);
      pids.push(...children.split(" ").filter(Boolean).map(Number));
    }
  }
  let rssKiB = 0;
  let pssKiB = 0;
  for (const each of pids) {
    rssKiB += kib(procFile(`/proc/${each}/status`), "VmRSS");
    pssKiB += kib(procFile(`/proc/${each}/smaps_rollup`), "Pss");
  }
  return { processes: pids.length, rssKiB, pssKiB };
}

function kib(text: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
}

const procFile = (path: string) => safe(() => readFileSync(path, "utf8"), "");

// A process can exit between listing and reading it.
function safe<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}
