import { createTestDatabaseUrl } from "@cubicle/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiProcess, startApiProcess } from "../../testing/api-process.ts";
import { deploymentSecrets, TRUSTED_ORIGIN } from "../../testing/harness.ts";
import { requestFrom } from "../../testing/peer.ts";

/**
 * Two api processes of one production deployment on one Postgres database. Each is its own
 * process, as replicas are: a limit kept in one process's memory would give each its own tries.
 */
const replicas: ApiProcess[] = [];

beforeAll(async () => {
  const shared = {
    NODE_ENV: "production",
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATABASE_URL: await createTestDatabaseUrl(),
    ...deploymentSecrets(),
    SANDBOX_PROVIDER: "none",
    TRUSTED_ORIGINS: TRUSTED_ORIGIN,
  };
  // One after the other: both would otherwise migrate the empty database at once.
  replicas.push(await startApiProcess(shared));
  replicas.push(await startApiProcess(shared));
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.close()));
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
