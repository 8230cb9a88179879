import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findFreePort } from "@cubicle/db/testing";

const repoRoot = resolve(import.meta.dirname, "..", "..");
const STARTUP_TIMEOUT_MS = 180_000;

export interface Stack {
  /** The dashboard's origin; it forwards /v1, /api and /health to the api. */
  webUrl: string;
  apiUrl: string;
  proxyUrl: string;
  dataDir: string;
  /** The variables the start command was given (what `npm run doctor` needs to find this instance). */
  env: Record<string, string>;
  output(): string;
  /** Stops every process and removes the computers (containers) of these workspaces. */
  close(workspaceIds: string[]): Promise<void>;
}

/**
 * Cubicle as the README's start command runs it — dashboard, api, screen proxy and supervisor, each
 * its own process, computers in real Docker — on free ports and a temporary DATA_DIR.
 */
export async function startStack(extraEnv: Record<string, string> = {}): Promise<Stack> {
  const [port, proxyPort, webPort, supervisorPort] = await Promise.all([
    findFreePort(),
    findFreePort(),
    findFreePort(),
    findFreePort(),
  ]);
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-e2e-stack-"));
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/root",
    DATA_DIR: dataDir,
    PORT: String(port),
    PROXY_PORT: String(proxyPort),
    WEB_PORT: String(webPort),
    SANDBOX_PROVIDER: "docker",
    SANDBOX_SUPERVISOR_URL: `http://127.0.0.1:${supervisorPort}`,
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  const child = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const stack: Stack = {
    webUrl: `http://127.0.0.1:${webPort}`,
    apiUrl: `http://127.0.0.1:${port}`,
    proxyUrl: `http://127.0.0.1:${proxyPort}`,
    dataDir,
    env,
    output: () => output,
    close: async (workspaceIds) => {
      await stop(child);
      removeComputers(workspaceIds);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    for (const url of [
      `${stack.webUrl}/health`,
      `${stack.proxyUrl}/health`,
      `http://127.0.0.1:${supervisorPort}/health`,
    ])
      await waitForOk(url, child, () => output);
  } catch (error) {
    await stack.close([]);
    throw error;
  }
  return stack;
}

async function waitForOk(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the start command exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 300));
  }
  throw new Error(`${url} did not answer within ${STARTUP_TIMEOUT_MS / 1000} s:\n${output()}`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

function removeComputers(workspaceIds: string[]): void {
  for (const workspaceId of workspaceIds) {
    const ids = execFileSync(
      "docker",
      ["ps", "-aq", "--filter", `label=cubicle.workspaceId=${workspaceId}`],
      {
        encoding: "utf8",
      },
    )
      .split("\n")
      .filter(Boolean);
    if (ids.length > 0) execFileSync("docker", ["rm", "-f", ...ids], { stdio: "ignore" });
  }
}
