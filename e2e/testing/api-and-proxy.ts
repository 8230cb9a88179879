import { randomBytes } from "node:crypto";
import { startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import { findFreePort } from "@cubicle/db/testing";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";

/**
 * A real api and a real screen proxy that share one capability key, the proxy admitting sockets
 * from `pageOrigin` (the test's noVNC page): what a browser needs to watch a live screen. With
 * `logs`, both log at debug level and every line they write is pushed there (else they are silent).
 * `key` is the shared capability key, for a test that starts another replica or forges tokens.
 */
export async function startApiAndProxy(
  env: Record<string, string>,
  pageOrigin: string,
  options: { logs?: string[] } = {},
): Promise<{ t: TestApi; proxy: RunningProxy; key: string }> {
  const { logs } = options;
  const logDestination = logs && { write: (line: string) => void logs.push(line) };
  const key = randomBytes(32).toString("base64url");
  const proxyPort = String(await findFreePort());
  const t = await startTestApi(
    {
      ...(logs ? { LOG_LEVEL: "debug" } : {}),
      ...env,
      SCREEN_CAPABILITY_KEY: key,
      PROXY_PUBLIC_URL: `ws://127.0.0.1:${proxyPort}`,
    },
    { logDestination },
  );
  const proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: key,
      PROXY_PORT: proxyPort,
      CUBICLE_API_URL: t.api.url,
      PROXY_ALLOWED_ORIGINS: pageOrigin,
      LOG_LEVEL: logs ? "debug" : "silent",
    }),
    { logDestination },
  );
  return { t, proxy, key };
}
