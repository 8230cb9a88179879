import { randomBytes } from "node:crypto";
import net from "node:net";
import type { Computer } from "@cubicle/db";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { CapabilityKeyring, mintCapability } from "@cubicle/proxy/capability";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createComputer, destroyMachine, machineFor } from "../testing/computers.ts";
import { expectStatus, startTestApi, type TestApi, type TestClient } from "../testing/harness.ts";
import {
  ACCESS_REVOKED,
  CONTROL_ENDED,
  expectClosedByTheChange,
  expectStillLive,
} from "../testing/revocation.ts";
import { type OpenedScreen, openScreenSocket, refusedStatus } from "../testing/screen-socket.ts";
import { until } from "../testing/until.ts";
import { buildWorld, join, type Role, type World } from "../testing/world.ts";

/**
 * Access taken away closes the sockets it opened: the real api, two real proxy replicas following
 * it, and a real desktop screen (Xvfb + x11vnc). Whatever ends the access (removal, a lower role,
 * a revoked key, a deleted account), every socket it opened closes with 4004,
 * on every replica, while everyone who keeps access keeps watching.
 */
const key = randomBytes(32).toString("base64url");
let t: TestApi;
const proxies: RunningProxy[] = [];
let world: World;
let computer: Computer;

beforeAll(async () => {
  t = await startTestApi({ SANDBOX_PROVIDER: "desktop", SCREEN_CAPABILITY_KEY: key });
  for (let i = 0; i < 2; i++)
    proxies.push(
      await startProxy(
        parseProxyConfig({
          SCREEN_CAPABILITY_KEY: key,
          PROXY_PORT: "0",
          CUBICLE_API_URL: t.api.url,
          LOG_LEVEL: "silent",
        }),
      ),
    );
  world = await buildWorld(t, "revocation");
  computer = await createComputer(t, world.workspaceId);
  await waitUntil(() => proxies.every((proxy) => proxy.controlLeasesFollowed()));
});

afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  if (computer) {
    await destroyMachine(t, computer);
  }
  await t?.close();
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const workspacePath = () => `/v1/workspaces/${world.workspaceId}`;
const screenPath = () => `${workspacePath()}/computers/${computer.id}/screens/0`;

let people = 0;
/** Someone new in the workspace, so that taking their access away leaves the shared world alone. */
async function newcomer(role: Role): Promise<TestClient> {
  return join(t, world.people.owner, world.workspaceId, `${role}-${++people}-revocation@example.com`, role);
}

async function mint(client: TestClient, mode: "view" | "control", apiKey?: string): Promise<string> {
  const response = await client.post(`${screenPath()}/capabilities`, { mode }, apiKey ? { apiKey } : {});
  return expectStatus(response, 201).json.token;
}

/** One socket per proxy replica, each opened with its own capability. */
async function onEveryReplica(client: TestClient, mode: "view" | "control", apiKey?: string) {
  const sockets: OpenedScreen[] = [];
  for (const proxy of proxies)
    sockets.push(await openScreenSocket(proxy.url, await mint(client, mode, apiKey)));
  return sockets;
}

async function memberIdOf(client: TestClient): Promise<string> {
  const members = expectStatus(await world.people.owner.get(`${workspacePath()}/members`), 200).json.items;
  const member = members.find((m: { userId: string }) => m.userId === client.userId);
  if (!member) throw new Error("not a member");
  return member.id;
}

async function viewerKey(client: TestClient): Promise<{ id: string; key: string }> {
  const body = { name: `watcher-${randomBytes(3).toString("hex")}`, role: "viewer" };
  return expectStatus(await client.post(`${workspacePath()}/api-keys`, body), 201).json;
}

describe("access taken away closes the sockets it opened, on every proxy replica", () => {
  it("a removed member: their view sockets and their key's close; a capability minted before is refused", async () => {
    const leaving = await newcomer("member");
    const { key: leavingKey } = await viewerKey(leaving);
    const sockets = [
      ...(await onEveryReplica(leaving, "view")),
      ...(await onEveryReplica(t.client(), "view", leavingKey)),
    ];
    const unopened = await mint(leaving, "view");
    const staying = await onEveryReplica(world.people.viewer, "view");
    const memberId = await memberIdOf(leaving);
    await expectClosedByTheChange(sockets, async () => {
      expectStatus(await world.people.admin.delete(`${workspacePath()}/members/${memberId}`), 204);
    });
    expect(await refusedStatus(proxies[0]?.url ?? "", ["cubicle.screen.v1", unopened])).toBe(404);
    await expectStillLive(staying);
  });

  it("a member demoted to viewer: the control socket closes and the lease ends, the view socket stays", async () => {
    const demoted = await newcomer("member");
    const lease = expectStatus(await demoted.post(`${screenPath()}/control`), 201).json;
    // The target outlives the lease (as a vendor's screen does), so that only the proxy closes the
    // socket, not the control server stopping with the lease.
    const { provider, ref } = await machineFor(t, computer);
    const { token } = await mintCapability(new CapabilityKeyring({ current: key }), {
      subject: `user:${demoted.userId}`,
      workspaceId: world.workspaceId,
      computerId: computer.id,
      screen: 0,
      mode: "control",
      controlLeaseId: lease.leaseId,
      target: await provider.openScreen(ref, 0),
    });
    const control = await openScreenSocket(proxies[0]?.url ?? "", token);
    const view = await onEveryReplica(demoted, "view");
    const memberId = await memberIdOf(demoted);
    // Its lease is revoked too, so which of the two the proxy hears first may decide the code.
    await expectClosedByTheChange([control], async () => {
      expectStatus(
        await world.people.admin.patch(`${workspacePath()}/members/${memberId}`, { role: "viewer" }),
        200,
      );
    }, [ACCESS_REVOKED, CONTROL_ENDED]);
    // the expiry job, four times a second, revokes it
    const reason = await until("the lease to end", async () => {
      const row = await t.database.db
        .selectFrom("control_leases")
        .select("release_reason")
        .where("id", "=", lease.leaseId)
        .executeTakeFirstOrThrow();
      return row.release_reason ?? undefined;
    });
    expect(reason).toBe("revoked");
    // the screen is free again for someone who may control it
    const next = expectStatus(await world.people.member.post(`${screenPath()}/control`), 201).json;
    expectStatus(await world.people.member.delete(`${screenPath()}/control/${next.leaseId}`), 204);
    await expectStillLive(view);
  });

  it("a role Cubicle does not know gives no access: the view sockets close", async () => {
    const unknown = await newcomer("viewer");
    const sockets = await onEveryReplica(unknown, "view");
    await expectClosedByTheChange(sockets, async () => {
      await t.database.db
        .updateTable("member")
        .set({ role: "guest" })
        .where("id", "=", await memberIdOf(unknown))
        .execute();
    });
  });

  it("a revoked API key: its view sockets close, its creator's own stay", async () => {
    const creator = await newcomer("member");
    const { id, key: apiKey } = await viewerKey(creator);
    const sockets = await onEveryReplica(t.client(), "view", apiKey);
    const own = await onEveryReplica(creator, "view");
    await expectClosedByTheChange(sockets, async () => {
      expectStatus(await creator.delete(`${workspacePath()}/api-keys/${id}`), 204);
    });
    await expectStillLive(own);
  });

  it("an API key that expires: its view sockets close when it does", async () => {
    const creator = await newcomer("member");
    const { id, key: apiKey } = await viewerKey(creator);
    const sockets = await onEveryReplica(t.client(), "view", apiKey);
    const expiresAt = new Date(Date.now() + 1_500);
    await t.database.db.updateTable("apikey").set({ expiresAt }).where("id", "=", id).execute();
    const codes = await Promise.all(sockets.map((socket) => socket.closed));
    expect(codes).toEqual([ACCESS_REVOKED, ACCESS_REVOKED]);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt.getTime());
  });

  // Cubicle has no route that deletes an account (and Better Auth's is off): the row goes the way
  // any deletion would, and the cascade to its memberships is what must be heard.
  it("a deleted account: its view sockets close, everyone else's stay", async () => {
    const deleted = await newcomer("admin");
    const sockets = await onEveryReplica(deleted, "view");
    const staying = await onEveryReplica(world.people.member, "view");
    await expectClosedByTheChange(sockets, async () => {
      await t.database.db.deleteFrom("user").where("id", "=", deleted.userId).execute();
    });
    await expectStillLive(staying);
  });

  // Cubicle has no route for it (and Better Auth's own endpoint is not served); deleting the row
  // stands for whatever will, and the cascade to its members is what is heard.
  it("a deleted workspace: every socket in it closes, sockets elsewhere stay", async () => {
    const owner = world.people.owner;
    const doomed = expectStatus(await owner.post("/v1/workspaces", { name: "Doomed" }), 201).json;
    const elsewhere = await createComputer(t, doomed.id);
    try {
      const path = `/v1/workspaces/${doomed.id}/computers/${elsewhere.id}/screens/0/capabilities`;
      const sockets: OpenedScreen[] = [];
      for (const proxy of proxies) {
        const { token } = expectStatus(await owner.post(path, { mode: "view" }), 201).json;
        sockets.push(await openScreenSocket(proxy.url, token));
      }
      const staying = await onEveryReplica(owner, "view");
      await expectClosedByTheChange(sockets, async () => {
        await t.database.db.deleteFrom("organization").where("id", "=", doomed.id).execute();
      });
      await expectStillLive(staying);
    } finally {
      await destroyMachine(t, elsewhere);
    }
  });
});

/** A cuttable loopback link from a proxy to api, so the stream can break while api and screen run on. */
async function relayTo(target: string) {
  const { port } = new URL(target);
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), "127.0.0.1");
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      socket.on("error", () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of open) socket.destroy();
      }),
  };
}

describe("while the proxy cannot follow access changes", () => {
  it("closes control sockets at once (4003) and view sockets after a short grace (4005)", async () => {
    const relay = await relayTo(t.api.url);
    const cutOff = await startProxy(
      parseProxyConfig({
        SCREEN_CAPABILITY_KEY: key,
        PROXY_PORT: "0",
        CUBICLE_API_URL: relay.url,
        LOG_LEVEL: "silent",
      }),
    );
    try {
      await waitUntil(() => cutOff.controlLeasesFollowed() && cutOff.accessChangesFollowed());
      const holder = await newcomer("member");
      const lease = expectStatus(await holder.post(`${screenPath()}/control`), 201).json;
      const control = await openScreenSocket(cutOff.url, await mint(holder, "control"));
      const view = await openScreenSocket(cutOff.url, await mint(world.people.viewer, "view"));
      await relay.cut();
      const cut = Date.now();
      expect(await control.closed).toBe(4003);
      expect(await view.closed).toBe(4005);
      expect(Date.now() - cut).toBeLessThanOrEqual(10_000);
      expectStatus(await holder.delete(`${screenPath()}/control/${lease.leaseId}`), 204);
    } finally {
      await cutOff.close();
    }
  });
});
