import { request } from "node:http";
import { createComputer, destroyMachine } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi, TRUSTED_ORIGIN } from "@cubicle/api/testing/harness";
import { openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { startApiAndProxy } from "@cubicle/e2e/testing/api-and-proxy";
import type { ScreenTarget } from "@cubicle/providers/contract";
import type { RunningProxy } from "@cubicle/proxy";
import { type CapabilityGrant, SCREEN_PATH } from "@cubicle/proxy/capability";

/**
 * The real screen path a hostile client attacks: an api on the desktop provider (a real Xvfb and
 * x11vnc per screen) minting capabilities, and the real proxy sharing its key.
 */
export interface ScreenStack {
  t: TestApi;
  proxy: RunningProxy;
  /** The capability key api and proxy share: forged tokens are signed with it. */
  key: string;
  world: World;
  computer: Computer;
  /** A view capability minted by api for the workspace's viewer. */
  mintView(): Promise<string>;
  /**
   * What api seals for the workspace's viewer on screen 0, to be sealed by a test itself (with
   * another key, say); the target is a closed port unless one is given.
   */
  viewGrant(target?: ScreenTarget): CapabilityGrant;
  /**
   * What broke for a legitimate viewer: opens a socket with a fresh capability and asks for a
   * few pixels of the live screen. Empty when the proxy still serves.
   */
  stillServes(): Promise<string[]>;
  /** How many sockets the proxy has refused for `reason` so far. */
  refusals(reason: string): Promise<number>;
  close(): Promise<void>;
}

export async function startScreenStack(tag: string): Promise<ScreenStack> {
  const { t, proxy, key } = await startApiAndProxy({ SANDBOX_PROVIDER: "desktop" }, TRUSTED_ORIGIN);
  const world = await buildWorld(t, tag);
  const computer = await createComputer(t, world.workspaceId);
  const capabilities = `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/0/capabilities`;
  const mintView = async (): Promise<string> =>
    expectStatus(await world.people.viewer.post(capabilities, { mode: "view" }), 201).json.token;
  return {
    t,
    proxy,
    key,
    world,
    computer,
    mintView,
    viewGrant: (target = { kind: "vnc", host: "127.0.0.1", port: 5900, password: "x" }) => ({
      subject: `user:${world.people.viewer.userId}`,
      workspaceId: world.workspaceId,
      computerId: computer.id,
      screen: 0,
      mode: "view",
      target,
    }),
    async stillServes() {
      try {
        const screen = await openScreenSocket(proxy.url, await mintView(), { origin: TRUSTED_ORIGIN });
        screen.rfb.requestUpdate({ x: 0, y: 0, width: 8, height: 8 });
        const rectangles = await screen.rfb.readUpdate();
        screen.ws.close();
        return rectangles.length > 0 ? [] : ["proxy sent a viewer an empty update"];
      } catch (error) {
        return [`proxy stopped serving: ${error instanceof Error ? error.message : String(error)}`];
      }
    },
    async refusals(reason) {
      const text = await proxy.metrics.registry.getSingleMetricAsString("cubicle_proxy_refusals_total");
      const match = new RegExp(`reason="${reason}"\\} (\\d+)`).exec(text);
      return match ? Number(match[1]) : 0;
    },
    async close() {
      await proxy.close();
      await destroyMachine(t, computer);
      await t.close();
    },
  };
}

/**
 * Asks for a screen socket with raw request headers, so that any Sec-WebSocket-Protocol value can
 * be sent (a WebSocket client refuses to send malformed ones). Answers the HTTP status: 101 when
 * the proxy admitted the socket, which is then dropped at once.
 */
export function upgradeStatus(
  proxyUrl: string,
  protocols: string | undefined,
  headers: Record<string, string> = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const upgrade = request(`${proxyUrl}${SCREEN_PATH}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        ...(protocols === undefined ? {} : { "sec-websocket-protocol": protocols }),
        ...headers,
      },
    });
    upgrade.once("upgrade", (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    upgrade.once("response", (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    upgrade.once("error", reject);
    upgrade.end();
  });
}
