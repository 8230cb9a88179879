import { cookiesOf, requestFrom } from "@cubicle/api/testing/peer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "../testing/stack.ts";

/**
 * The start command's dashboard in front of its api: the address the audit log records for a
 * browser is the one the dashboard's server saw the browser connect from — never the dashboard's
 * own, and never what the browser claims in forwarding headers.
 */
// Linux answers all of 127.0.0.0/8: the browser connects from an address that is not the
// dashboard server's own (127.0.0.1), so the two can be told apart.
const BROWSER = "127.0.0.3";
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
}, 240_000);
afterAll(() => stack?.close([]));

describe("client addresses behind the dashboard", () => {
  it("records the browser's own address; forwarding headers the browser sent do not reach the audit log", async () => {
    const origin = stack.webUrl;
    const spoofed = {
      origin,
      "x-forwarded-for": "203.0.113.7",
      "x-real-ip": "203.0.113.8",
      forwarded: "for=203.0.113.9",
    };
    const signedUp = await requestFrom(BROWSER, `${stack.webUrl}/api/auth/sign-up/email`, {
      method: "POST",
      headers: spoofed,
      body: { email: "owner@example.test", password: "correct horse battery", name: "Owner" },
    });
    expect(signedUp.status, signedUp.text).toBe(200);
    const events = await requestFrom(
      BROWSER,
      `${stack.webUrl}/v1/deployment/audit-events?action=auth.sign_up&limit=10`,
      { headers: { ...spoofed, cookie: cookiesOf(signedUp) } },
    );
    expect(events.status, events.text).toBe(200);
    expect(events.json.items.map((event: { ip: string | null }) => event.ip)).toEqual([BROWSER]);
  });
});
