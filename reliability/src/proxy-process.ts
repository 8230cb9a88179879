import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { findFreePort } from "@cubicle/db/testing";

const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
const PROXY_MAIN = resolve(import.meta.dirname, "testing", "proxy-main.ts");
const STARTUP_TIMEOUT_MS = 30_000;

export interface ProxyMemory {
  /** Resident set size from /proc after a forced full collection: what the OS sees the proxy hold. */
  rss: number;
  /** V8's heap and the buffers outside it, as the proxy reported them after that collection. */
  heapUsed: number;
  external: number;
}

export interface ProxyProcess {
  url: string;
  port: number;
  pid: number;
  /** Collects garbage in the proxy, then weighs it. */
  memory(): Promise<ProxyMemory>;
  /** The proxy's /health body (its open socket counts). */
  health(): Promise<{
    ok: boolean;
    sockets: { view: number; control: number; record: number };
    accessChanges: string;
  }>;
  /** How many sockets the proxy has refused, by the reason it counted (outside, all are a bare 404). */
  refusals(): Promise<Map<string, number>>;
  output(): string;
  /** Sends `signal` and resolves once the process is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
  close(): Promise<void>;
}

/**
 * The screen proxy as its own process, as production runs it (its main, its environment), so that
 * its memory is its own and not shared with the test runner's or the api's. `port` starts it where
 * one that died listened, as a restarted proxy behind the same public address is.
 */
export async function startProxyProcess(
  env: Record<string, string>,
  options: { port?: number } = {},
): Promise<ProxyProcess> {
  const port = options.port ?? (await findFreePort());
  const metricsToken = env.METRICS_TOKEN ?? randomBytes(32).toString("base64url");
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", PROXY_MAIN], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      LOG_LEVEL: "silent",
      ...env,
      METRICS_TOKEN: metricsToken,
      PROXY_PORT: String(port),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let lines: Array<(line: string) => void> = [];
  let pending = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    pending += chunk.toString();
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      for (const listener of lines) listener(line);
      newline = pending.indexOf("\n");
    }
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  const proxy: ProxyProcess = {
    url,
    port,
    pid: child.pid ?? 0,
    output: () => output,
    health: async () => (await fetch(`${url}/health`)).json(),
    refusals: async () => {
      const response = await fetch(`${url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      });
      const text = await response.text();
      const counted = /^cubicle_proxy_refusals_total\{reason="([^"]+)"\} (\d+)$/gm;
      return new Map([...text.matchAll(counted)].map(([, reason, n]) => [reason ?? "", Number(n)]));
    },
    memory: async () => {
      const collected = new Promise<NodeJS.MemoryUsage>((resolve) => {
        const listener = (line: string) => {
          if (!line.startsWith('{"collected"')) return;
          lines = lines.filter((other) => other !== listener);
          resolve(JSON.parse(line).collected);
        };
        lines.push(listener);
      });
      child.kill("SIGUSR2");
      const usage = await collected;
      return { rss: residentBytes(child), heapUsed: usage.heapUsed, external: usage.external };
    },
    kill: (signal) => stop(child, signal),
    close: () => stop(child, "SIGTERM"),
  };
  try {
    await waitForHealth(proxy, child);
  } catch (error) {
    await proxy.close();
    throw error;
  }
  return proxy;
}

function residentBytes(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (!kib) throw new Error(`no VmRSS in /proc/${child.pid}/status`);
  return Number(kib) * 1024;
}

async function waitForHealth(proxy: ProxyProcess, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the proxy exited (${child.exitCode ?? child.signalCode}):\n${proxy.output()}`);
    try {
      // followed streams: a proxy that cannot check access refuses every socket
      const health = await proxy.health();
      if (health.accessChanges === "followed") return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`the proxy did not start within ${STARTUP_TIMEOUT_MS / 1000} s:\n${proxy.output()}`);
}

function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill(signal);
  });
}
