import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi, TRUSTED_ORIGIN } from "../testing/harness.ts";
import { cookiesOf, requestFrom } from "../testing/peer.ts";

/**
 * Whose address the api records (audit log, sign-in limit): the peer's own, unless the peer is a
 * configured proxy (TRUSTED_PROXIES), whose X-Forwarded-For is then read as far as proxies vouch.
 */
const PROXY = "127.0.0.2";
const ANYONE = "127.0.0.1";
const PASSWORD = "correct horse battery";

let t: TestApi;
let limited: TestApi;
beforeAll(async () => {
  t = await startTestApi({ TRUSTED_PROXIES: `${PROXY}, 10.0.0.0/8` });
  limited = await startTestApi({ TRUSTED_PROXIES: PROXY, AUTH_RATE_LIMIT: "on" });
});
afterAll(async () => {
  await t?.close();
  await limited?.close();
});

const signIn = (api: TestApi, from: string, email: string, password: string, forwardedFor?: string) =>
  requestFrom(from, `${api.api.url}/api/auth/sign-in/email`, {
    method: "POST",
    headers: { origin: TRUSTED_ORIGIN, ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}) },
    body: { email, password },
  });

describe("client addresses", () => {
  let ownerCookie = "";
  const auditIps = async (action: string) => {
    const page = await requestFrom(
      ANYONE,
      `${t.api.url}/v1/deployment/audit-events?action=${action}&limit=50`,
      {
        headers: { cookie: ownerCookie },
      },
    );
    expect(page.status, page.text).toBe(200);
    return (page.json.items as { ip: string | null }[]).map((event) => event.ip);
  };

  beforeAll(async () => {
    const signedUp = await requestFrom(ANYONE, `${t.api.url}/api/auth/sign-up/email`, {
      method: "POST",
      headers: { origin: TRUSTED_ORIGIN, "x-forwarded-for": "203.0.113.7" },
      body: { email: "owner@example.com", password: PASSWORD, name: "Owner" },
    });
    expect(signedUp.status, signedUp.text).toBe(200);
    ownerCookie = cookiesOf(signedUp);
  });

  it("records the peer's own address and ignores X-Forwarded-For from a peer that is no configured proxy", async () => {
    expect(await auditIps("auth.sign_up")).toEqual([ANYONE]);
    const refused = await signIn(t, ANYONE, "owner@example.com", "not the password", "203.0.113.9");
    expect(refused.status).toBe(401);
    expect((await auditIps("auth.sign_in_failed"))[0]).toBe(ANYONE);
  });

  it("honours X-Forwarded-For from a configured proxy, up to the nearest address no proxy vouches for", async () => {
    // The browser claimed 192.0.2.66; the proxy at PROXY appended the peer it saw, 198.51.100.1,
    // which came through another trusted hop (10.1.2.3, inside 10.0.0.0/8).
    const forwarded = "192.0.2.66, 198.51.100.1, 10.1.2.3";
    const signedIn = await signIn(t, PROXY, "owner@example.com", PASSWORD, forwarded);
    expect(signedIn.status, signedIn.text).toBe(200);
    expect((await auditIps("auth.sign_in"))[0]).toBe("198.51.100.1");
    // Without the header a proxy's request is its own.
    expect((await signIn(t, PROXY, "owner@example.com", PASSWORD)).status).toBe(200);
    expect((await auditIps("auth.sign_in"))[0]).toBe(PROXY);
  });

  it("keys the sign-in limit by that address: a claimed address buys no tries, a proxied one has its own", async () => {
    const email = "limited@example.com";
    const created = await requestFrom(ANYONE, `${limited.api.url}/api/auth/sign-up/email`, {
      method: "POST",
      headers: { origin: TRUSTED_ORIGIN },
      body: { email, password: PASSWORD, name: "Limited" },
    });
    expect(created.status, created.text).toBe(200);
    const statuses: number[] = [];
    for (const claimed of ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"])
      statuses.push((await signIn(limited, ANYONE, email, "not the password", claimed)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const refused = await signIn(limited, ANYONE, email, PASSWORD);
    expect(refused.status).toBe(429);
    expect(refused.headers["content-type"]).toContain("application/problem+json");
    expect(refused.json).toMatchObject({ status: 429, title: "Too Many Requests", code: "AUTH_429" });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // Someone else behind the proxy is not refused for what 127.0.0.1 did.
    expect((await signIn(limited, PROXY, email, PASSWORD, "198.51.100.20")).status).toBe(200);
  });
});
