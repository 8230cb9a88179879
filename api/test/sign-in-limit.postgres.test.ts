import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createTestDatabaseUrl, findFreePort } from "@cubicle/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRUSTED_ORIGIN } from "./support/harness.ts";
import { requestFrom } from "./support/peer.ts";

/**
 * Two api processes of one production deployment on one Postgres database. Each is its own
 * process, as replicas are: a limit kept in one process's memory would give each its own tries.
 */
const apiMain = resolve(import.meta.dirname, "..", "src", "main.ts");
const replicas: { url: string; child: ChildProcess; output: () => string }[] = [];
const dataDirs: string[] = [];

async function startReplica(shared: Record<string, string>) {
  const port = await findFreePort();
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-sign-in-limit-"));
  dataDirs.push(dataDir);
  const child = spawn(process.execPath, ["--import", "tsx", apiMain], {
    env: { PATH: process.env.PATH ?? "", ...shared, PORT: String(port), DATA_DIR: dataDir },
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
  replicas.push({ url, child, output: () => output });
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    if (child.exitCode !== null) throw new Error(`replica exited (${child.exitCode}):\n${output}`);
    const health = await fetch(`${url}/health`).catch(() => undefined);
    if (health?.ok) return url;
    await new Promise((done) => setTimeout(done, 200));
  }
  throw new Error(`replica did not answer:\n${output}`);
}

beforeAll(async () => {
  const shared = {
    NODE_ENV: "production",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATABASE_URL: await createTestDatabaseUrl(),
    BETTER_AUTH_SECRET: randomBytes(32).toString("base64url"),
    ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
    SCREEN_CAPABILITY_KEY: randomBytes(32).toString("base64url"),
    SANDBOX_PROVIDER: "none",
    TRUSTED_ORIGINS: TRUSTED_ORIGIN,
  };
  // One after the other: both would otherwise migrate the empty database at once.
  await startReplica(shared);
  await startReplica(shared);
}, 120_000);

afterAll(async () => {
  await Promise.all(
    replicas.map(
      ({ child }) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null) return done();
          child.once("exit", () => done());
          child.kill("SIGTERM");
        }),
    ),
  );
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

describe("two api replicas on one Postgres", () => {
  it("share one sign-in limit: the try after the last allowed one is refused on either", async () => {
    const [first, second] = replicas.map((replica) => replica.url) as [string, string];
    const post = (url: string, path: string, body: unknown) =>
      requestFrom("127.0.0.1", `${url}${path}`, {
        method: "POST",
        headers: { origin: TRUSTED_ORIGIN },
        body,
      });
    const email = "owner@example.com";
    const signedUp = await post(first, "/api/auth/sign-up/email", {
      email,
      password: "correct horse battery",
      name: "Owner",
    });
    expect(signedUp.status, signedUp.text).toBe(200);

    // Better Auth's rule for sign-in: three tries per address in ten seconds.
    const statuses: number[] = [];
    for (const url of [first, second, first, second]) {
      const tried = await post(url, "/api/auth/sign-in/email", { email, password: "not the password" });
      statuses.push(tried.status);
      if (tried.status === 429) {
        expect(tried.headers["content-type"]).toContain("application/problem+json");
        expect(tried.json).toMatchObject({ status: 429, title: "Too Many Requests", code: "AUTH_429" });
        expect(Number(tried.headers["retry-after"])).toBeGreaterThan(0);
      }
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    // The right password does not get past the limit either, on the other replica.
    const refused = await post(first, "/api/auth/sign-in/email", {
      email,
      password: "correct horse battery",
    });
    expect(refused.status).toBe(429);
  });
});
