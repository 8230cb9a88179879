import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findFreePort } from "@cubicle/db/testing";
import { afterEach, describe, expect, it } from "vitest";

const repoRoot = resolve(import.meta.dirname, "..", "..");
const running: ChildProcess[] = [];
const dataDirs: string[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map(stop));
  for (const dir of dataDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * The README's start command, run as a newcomer would: no configuration at all. Only PORT and
 * DATA_DIR are set, so the test neither collides with a developer's instance nor writes into
 * the checkout.
 */
function startCommand(extraEnv: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-quick-start-"));
  dataDirs.push(dataDir);
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/root",
    DATA_DIR: dataDir,
    ...extraEnv,
  };
  const child = spawn(process.execPath, ["scripts/start.mjs"], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return { child, dataDir, exited, output: () => output };
}

async function waitForHealth(url: string, exited: Promise<number | null>, output: () => string) {
  const deadline = Date.now() + 90_000;
  let exitCode: number | null | undefined;
  void exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== undefined) throw new Error(`start command exited with ${exitCode}:\n${output()}`);
    try {
      return await fetch(url);
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`no answer from ${url} within 90 s:\n${output()}`);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

describe("quick start", () => {
  it("serves GET /health with db ok on the embedded defaults, with no configuration", async () => {
    const port = await findFreePort();
    const proxyPort = await findFreePort();
    const supervisorPort = await findFreePort();
    const webPort = await findFreePort();
    const ports = {
      PORT: String(port),
      PROXY_PORT: String(proxyPort),
      WEB_PORT: String(webPort),
      SANDBOX_SUPERVISOR_URL: `http://127.0.0.1:${supervisorPort}`,
    };
    const run = startCommand(ports);
    const response = await waitForHealth(`http://127.0.0.1:${port}/health`, run.exited, run.output);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      ok: true,
      db: "ok",
      dbDialect: "pglite",
      sandbox: "docker",
    });
    // the same command runs the screen proxy (following api's control leases) and the supervisor
    const proxyHealth = await waitForHealth(`http://127.0.0.1:${proxyPort}/health`, run.exited, run.output);
    expect(await proxyHealth.json()).toMatchObject({ ok: true });
    const supervisorHealth = await waitForHealth(
      `http://127.0.0.1:${supervisorPort}/health`,
      run.exited,
      run.output,
    );
    expect(await supervisorHealth.json()).toMatchObject({ ok: true, docker: "ok" });
    // and the dashboard, which answers for the api on its own origin
    const signIn = await waitForHealth(`http://127.0.0.1:${webPort}/sign-in`, run.exited, run.output);
    expect(signIn.status).toBe(200);
    expect(await signIn.text()).toContain("Sign in");
    const forwarded = await fetch(`http://127.0.0.1:${webPort}/health`);
    expect(await forwarded.json()).toMatchObject({ ok: true, db: "ok", sandbox: "docker" });

    // Development secrets were generated, kept private, and survive a restart.
    const secretFile = join(run.dataDir, "secrets", "better-auth-secret");
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    const before = statSync(secretFile).mtimeMs;
    await stop(run.child);
    const again = spawn(process.execPath, ["scripts/start.mjs"], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/root",
        DATA_DIR: run.dataDir,
        ...ports,
      },
      stdio: "ignore",
    });
    running.push(again);
    const exited = new Promise<number | null>((done) => again.once("exit", (code) => done(code)));
    const second = await waitForHealth(`http://127.0.0.1:${port}/health`, exited, () => "");
    expect(second.status).toBe(200);
    expect(statSync(secretFile).mtimeMs).toBe(before);
  });

  it("refuses to start in production without secrets, naming what is missing", async () => {
    const run = startCommand({ NODE_ENV: "production", PORT: String(await findFreePort()) });
    const code = await run.exited;
    expect(code).not.toBe(0);
    expect(run.output()).toContain("BETTER_AUTH_SECRET");
    expect(run.output()).toContain("ENCRYPTION_KEY");
  });

  it("refuses placeholder and short secrets in production", async () => {
    const run = startCommand({
      NODE_ENV: "production",
      PORT: String(await findFreePort()),
      BETTER_AUTH_SECRET: "changeme",
      ENCRYPTION_KEY: "short",
    });
    expect(await run.exited).not.toBe(0);
    expect(run.output()).toMatch(/BETTER_AUTH_SECRET: .*placeholder/);
    expect(run.output()).toMatch(/ENCRYPTION_KEY: .*32 characters/);
    expect(run.output()).not.toContain("changeme");
  });

  describe("sandbox provider set-up", () => {
    const secrets = {
      NODE_ENV: "production",
      BETTER_AUTH_SECRET: "startup-test-auth-secret-0123456789abcdef",
      ENCRYPTION_KEY: "startup-test-encryption-key-0123456789abc",
      SCREEN_CAPABILITY_KEY: "startup-test-capability-key-0123456789ab",
    };

    it("refuses an unknown SANDBOX_PROVIDER in one line naming every valid value", async () => {
      const run = startCommand({ ...secrets, SANDBOX_PROVIDER: "bogus", PORT: String(await findFreePort()) });
      expect(await run.exited).not.toBe(0);
      expect(run.output()).toContain(
        'SANDBOX_PROVIDER: "bogus" is not a sandbox provider; use one of docker, e2b, daytona, box, desktop, none, fake, e2b-emulator, daytona-emulator, box-emulator',
      );
    });

    it("stops when docker has no supervisor token, naming SANDBOX_SUPERVISOR_TOKEN", async () => {
      const run = startCommand({
        ...secrets,
        SANDBOX_PROVIDER: "docker",
        PORT: String(await findFreePort()),
      });
      expect(await run.exited).not.toBe(0);
      expect(run.output()).toContain("SANDBOX_SUPERVISOR_TOKEN: missing");
    });

    it("refuses the fake provider in production", async () => {
      const run = startCommand({ ...secrets, SANDBOX_PROVIDER: "fake", PORT: String(await findFreePort()) });
      expect(await run.exited).not.toBe(0);
      expect(run.output()).toContain("The fake sandbox provider is for tests only");
    });
  });
});
