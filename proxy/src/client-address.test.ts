import { request } from "node:http";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseProxyConfig, type RunningProxy, startProxy } from "./server.ts";

// Linux answers all of 127.0.0.0/8, so one test can be a configured proxy and anyone else.
const PROXY = "127.0.0.2";
const logged: { msg: string; reason?: string; ip?: string }[] = [];
let proxy: RunningProxy;

beforeAll(async () => {
  const lines = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) logged.push(JSON.parse(line));
      done();
    },
  });
  proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: "k".repeat(40),
      PROXY_PORT: "0",
      CUBICLE_API_URL: "http://127.0.0.1:9",
      TRUSTED_PROXIES: PROXY,
    }),
    { logger: pino({ level: "info" }, lines) },
  );
});
afterAll(() => proxy?.close());

/** A screen-socket upgrade the proxy refuses (wrong path): it logs whose it was. */
function refusedUpgrade(from: string, forwardedFor: string): Promise<void> {
  return new Promise((resolve) => {
    const upgrade = request(`${proxy.url}/elsewhere`, {
      localAddress: from,
      headers: { connection: "Upgrade", upgrade: "websocket", "x-forwarded-for": forwardedFor },
    });
    upgrade.on("response", (response) => response.resume().on("end", resolve));
    upgrade.on("error", () => resolve());
    upgrade.end();
  });
}

describe("the screen proxy's client addresses", () => {
  it("are the peer's, unless the peer is a configured proxy (TRUSTED_PROXIES)", async () => {
    await refusedUpgrade("127.0.0.1", "203.0.113.7");
    await refusedUpgrade(PROXY, "192.0.2.1, 198.51.100.4");
    const refusals = logged.filter((line) => line.msg === "screen socket refused");
    expect(refusals.map((line) => [line.reason, line.ip])).toEqual([
      ["path", "127.0.0.1"],
      ["path", "198.51.100.4"],
    ]);
  });
});
