import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findFreePort } from "@cubicle/db/testing";
import { TestClient } from "./harness.ts";

const API_MAIN = resolve(import.meta.dirname, "..", "src", "main.ts");
const STARTUP_TIMEOUT_MS = 60_000;

export interface ApiProcess {
  url: string;
  pid: number;
  /** A caller with a cookie jar of its own, as TestApi.client() gives one. */
  client(): TestClient;
  output(): string;
  /** Sends `signal` and resolves once the process is gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
  close(): Promise<void>;
}

/**
 * An api replica as its own process, started by its production main with only the environment
 * given (plus a port and a data directory of its own): replicas of one deployment share a database
 * and secrets, never memory, so state kept in one process's memory is not seen by the other.
 * `nodeArgs` go to node itself (a bench's `--cpu-prof`, which NODE_OPTIONS may not carry).
 */
export async function startApiProcess(
  env: Record<string, string>,
  options: { nodeArgs?: readonly string[] } = {},
): Promise<ApiProcess> {
  const port = await findFreePort();
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-api-process-"));
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), "--import", "tsx", API_MAIN], {
    env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port), DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  const responses: string[] = [];
  const kill = async (signal: NodeJS.Signals) => {
    await ended(child, signal);
    rmSync(dataDir, { recursive: true, force: true });
  };
  const api: ApiProcess = {
    url,
    pid: child.pid ?? 0,
    client: () => new TestClient(url, responses),
    output: () => output,
    kill,
    close: () => kill("SIGTERM"),
  };
  for (const deadline = Date.now() + STARTUP_TIMEOUT_MS; Date.now() < deadline; ) {
    if (child.exitCode !== null) {
      await api.close();
      throw new Error(`the api exited (${child.exitCode}):\n${output}`);
    }
    const health = await fetch(`${url}/health`).catch(() => undefined);
    if (health?.ok) return api;
    await new Promise((done) => setTimeout(done, 200));
  }
  await api.kill("SIGKILL");
  throw new Error(`the api did not answer within ${STARTUP_TIMEOUT_MS / 1000} s:\n${output}`);
}

function ended(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill(signal);
  });
}
