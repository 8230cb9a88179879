import type { Computer } from "@cubicle/db";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { afterAll, beforeAll, describe, it } from "vitest";
import { createComputer, destroyMachine } from "../../testing/computers.ts";
import { expectStatus, type Replicas, startReplicas, type TestApi } from "../../testing/harness.ts";
import { expectClosedByTheChange, expectStillLive } from "../../testing/revocation.ts";
import { openScreenSocket } from "../../testing/screen-socket.ts";
import { buildWorld, join, type World } from "../../testing/world.ts";

/**
 * Two api replicas on one Postgres, each followed by its own proxy: a member removed through one
 * replica loses the sockets that both proxies hold, since the database's notification reaches
 * every replica's stream. Postgres only: an embedded database belongs to a single process.
 */
let deployment: Replicas;
let replicas: TestApi[];
const proxies: RunningProxy[] = [];
let world: World;
let computer: Computer;

beforeAll(async () => {
  deployment = await startReplicas(2, { SANDBOX_PROVIDER: "desktop" });
  ({ replicas } = deployment);
  for (const replica of replicas) {
    proxies.push(
      await startProxy(
        parseProxyConfig({
          SCREEN_CAPABILITY_KEY: deployment.env.SCREEN_CAPABILITY_KEY ?? "",
          PROXY_PORT: "0",
          CUBICLE_API_URL: replica.api.url,
          LOG_LEVEL: "silent",
        }),
      ),
    );
  }
  const first = replicas[0] as TestApi;
  world = await buildWorld(first, "replica-revocation");
  // The desktop provider keeps machines in its process: the first replica runs this one.
  computer = await createComputer(first, world.workspaceId);
}, 120_000);

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  if (computer && replicas[0]) {
    await destroyMachine(replicas[0], computer);
  }
  await deployment?.close();
});

describe("access taken away through one api replica", () => {
  it("closes the sockets that proxies following either replica hold, and no one else's", async () => {
    const first = replicas[0] as TestApi;
    const workspace = `/v1/workspaces/${world.workspaceId}`;
    const screen = `${workspace}/computers/${computer.id}/screens/0`;
    const leaving = await join(first, world.people.owner, world.workspaceId, "leaving@example.com", "viewer");
    const open = async (client: typeof leaving) => {
      const sockets = [];
      for (const proxy of proxies) {
        const { token } = expectStatus(
          await client.post(`${screen}/capabilities`, { mode: "view" }),
          201,
        ).json;
        sockets.push(await openScreenSocket(proxy.url, token));
      }
      return sockets;
    };
    const sockets = await open(leaving);
    const staying = await open(world.people.viewer);
    const members = expectStatus(await world.people.owner.get(`${workspace}/members`), 200).json.items;
    const memberId = members.find((m: { userId: string }) => m.userId === leaving.userId).id;
    // removed through the second replica, which neither minted nor opened anything
    const admin = world.people.admin.at((replicas[1] as TestApi).api.url);
    await expectClosedByTheChange(sockets, async () => {
      expectStatus(await admin.delete(`${workspace}/members/${memberId}`), 204);
    });
    await expectStillLive(staying);
  });
});
