import { randomBytes } from "node:crypto";
import { findFreePort } from "@cubicle/db/testing";
import { expectStatus, startTestApi, type TestApi, TRUSTED_ORIGIN } from "./harness.ts";
import { SessionClient } from "./sessions.ts";
import type { World } from "./world.ts";

export interface RecordingStack {
  t: TestApi;
  /** The proxy's environment: start it (in this process or as its own) on `proxyPort`. */
  proxyEnv: Record<string, string>;
  /** Where the api opens its record sockets; the proxy must listen there. */
  proxyPort: number;
}

/**
 * An api on real screens (the desktop provider's Xvfb and x11vnc) that reaches its proxy at a
 * port chosen before either starts: the api opens record sockets on the proxy, and the proxy
 * uploads recordings to the api, so each must know the other's address.
 */
export async function startRecordingApi(env: Record<string, string> = {}): Promise<RecordingStack> {
  const key = randomBytes(32).toString("base64url");
  const proxyPort = await findFreePort();
  const t = await startTestApi({
    SANDBOX_PROVIDER: "desktop",
    SCREEN_CAPABILITY_KEY: key,
    PROXY_INTERNAL_URL: `ws://127.0.0.1:${proxyPort}`,
    ...env,
  });
  const proxyEnv = {
    SCREEN_CAPABILITY_KEY: key,
    CUBICLE_API_URL: t.api.url,
    PROXY_ALLOWED_ORIGINS: TRUSTED_ORIGIN,
  };
  return { t, proxyEnv, proxyPort };
}

/** An automation with a member's API key, opening sessions in the world's workspace. */
export async function memberRobot(t: TestApi, w: World, name: string): Promise<SessionClient> {
  const apiKey = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name, role: "member" }),
    201,
  ).json.key as string;
  return new SessionClient({ client: t.client(), apiKey }, w.workspaceId);
}

export type RecordingMode = "off" | "control" | "control-and-sessions";

export async function setRecordingMode(w: World, mode: RecordingMode): Promise<void> {
  expectStatus(
    await w.people.admin.put(`/v1/workspaces/${w.workspaceId}/recording-policy`, {
      mode,
      retentionDays: null,
      retentionBytes: null,
    }),
    200,
  );
}
