import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseProxyConfig, type RunningProxy, startProxy } from "./server.ts";

const METRICS_TOKEN = "m".repeat(40);
const running: RunningProxy[] = [];
let proxy: RunningProxy;

const start = async (env: Record<string, string>) => {
  const started = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: "k".repeat(40),
      PROXY_PORT: "0",
      // Nothing answers there: the lease stream stays unavailable, which /metrics does not need.
      CUBICLE_API_URL: "http://127.0.0.1:9",
      LOG_LEVEL: "silent",
      ...env,
    }),
  );
  running.push(started);
  return started;
};

beforeAll(async () => {
  proxy = await start({ METRICS_TOKEN });
});
afterAll(async () => {
  await Promise.all(running.map((started) => started.close()));
});

describe("the proxy's /metrics", () => {
  it("answers with its bearer token", async () => {
    const response = await fetch(`${proxy.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain("cubicle_proxy_open_sockets");
  });

  it("is a bare 404, like every refusal of the proxy, without it, with a wrong one or with it in the URL", async () => {
    for (const [path, headers] of [
      ["/metrics", {}],
      ["/metrics", { authorization: `Bearer ${METRICS_TOKEN}x` }],
      [`/metrics?token=${METRICS_TOKEN}`, {}],
    ] as const) {
      const response = await fetch(`${proxy.url}${path}`, { headers });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe("");
    }
  });

  it("is not served at all without METRICS_TOKEN", async () => {
    const bare = await start({});
    expect((await fetch(`${bare.url}/metrics`)).status).toBe(404);
  });
});
