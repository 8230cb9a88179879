import { randomBytes } from "node:crypto";
import type { Computer } from "@cubicle/db";
import {
  CapabilityKeyring,
  mintCapability,
  mintServiceToken,
  SCREEN_PROTOCOL,
  verifyCapability,
} from "@cubicle/proxy/capability";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeFormerControllers } from "../src/screens/control-leases.ts";
import { createComputer, machineFor } from "../testing/computers.ts";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { EventStreamReader } from "../testing/sse.ts";
import { buildWorld, type World } from "../testing/world.ts";

const KEY = randomBytes(32).toString("base64url");
const keyring = new CapabilityKeyring({ current: KEY });
const acceptAll = { replay: { claim: async () => true } };

let t: TestApi;
let w: World;
let computer: Computer;
let memberKey: string;
let viewerKey: string;

beforeAll(async () => {
  t = await startTestApi({ SCREEN_CAPABILITY_KEY: KEY });
  w = await buildWorld(t, "screens");
  computer = await createComputer(t, w.workspaceId);
  const key = async (role: string) =>
    expectStatus(
      await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
        name: `screens-${role}`,
        role,
      }),
      201,
    ).json.key as string;
  memberKey = await key("member");
  viewerKey = await key("viewer");
});
afterAll(() => t?.close());

const screenPath = (
  screen: number | string,
  rest = "",
  of: Computer = computer,
  workspaceId = w.workspaceId,
) => `/v1/workspaces/${workspaceId}/computers/${of.id}/screens/${screen}${rest}`;

const mint = (who: TestClient, screen: number, mode: string, options?: { apiKey: string }) =>
  who.post(screenPath(screen, "/capabilities"), { mode }, options);
const take = (who: TestClient, screen: number) => who.post(screenPath(screen, "/control"));

function problem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 300)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
  return response.json;
}

const audits = (action: string, leaseId?: string) => {
  let query = t.database.db
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("workspace_id", "=", w.workspaceId);
  if (leaseId) query = query.where((eb) => eb(eb.ref("data", "->>").key("leaseId" as never), "=", leaseId));
  return query.orderBy("id").execute();
};

const leaseRow = (id: string) =>
  t.database.db.selectFrom("control_leases").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

async function serviceStream(api: TestApi) {
  const response = await fetch(`${api.api.url}/internal/proxy/control-leases`, {
    headers: {
      authorization: `Bearer ${await mintServiceToken(keyring, "proxy")}`,
      accept: "text/event-stream",
    },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  if (!response.body) throw new Error("no body");
  return new EventStreamReader(response.body);
}

describe("view capabilities", () => {
  it("are minted for every role and API keys, sealing the provider's target", async () => {
    const { provider, ref } = await machineFor(t, computer);
    const callers: [string, TestClient, { apiKey: string } | undefined, string][] = [
      ["owner", w.people.owner, undefined, `user:${w.people.owner.userId}`],
      ["admin", w.people.admin, undefined, `user:${w.people.admin.userId}`],
      ["member", w.people.member, undefined, `user:${w.people.member.userId}`],
      ["viewer", w.people.viewer, undefined, `user:${w.people.viewer.userId}`],
      ["member key", t.client(), { apiKey: memberKey }, "api_key:"],
      ["viewer key", t.client(), { apiKey: viewerKey }, "api_key:"],
    ];
    for (const [who, client, options, subject] of callers) {
      const before = Date.now();
      const body = expectStatus(await mint(client, 2, "view", options), 201).json;
      expect(body, who).toMatchObject({
        mode: "view",
        url: "ws://127.0.0.1:3200/screen",
        protocol: SCREEN_PROTOCOL,
      });
      const expiresAt = new Date(body.expiresAt).getTime();
      expect(expiresAt).toBeGreaterThan(before);
      expect(expiresAt).toBeLessThanOrEqual(before + 61_000);

      const verified = await verifyCapability(keyring, body.token, acceptAll);
      expect(verified.subject.startsWith(subject), who).toBe(true);
      expect(verified).toMatchObject({
        workspaceId: w.workspaceId,
        computerId: computer.id,
        screen: 2,
        mode: "view",
      });
      expect(verified.controlLeaseId).toBeUndefined();
      expect(verified.target).toEqual(await provider.openScreen(ref, 2));
      expect(Object.keys(body).sort()).toEqual(["expiresAt", "mode", "protocol", "recorded", "token", "url"]);
      // nothing records this workspace's screens
      expect(body.recorded).toBe(false);

      const [audit] = (await audits("screen.capability_minted")).filter(
        (row) => row.data.jti === verified.jti,
      );
      expect(audit, who).toMatchObject({
        target_type: "computer",
        target_id: computer.id,
        data: { mode: "view", screen: 2, jti: verified.jti },
      });
      expect(JSON.stringify(audit?.data)).not.toContain(body.token);
    }
  });

  it("are refused for other workspaces' computers, unknown computers and bad screens", async () => {
    // The outsider is a member of their own workspace, and names this computer through it.
    const elsewhere = screenPath(0, "/capabilities", computer, w.otherWorkspaceId);
    problem(await w.people.outsider.post(elsewhere, { mode: "view" }), 404, "COMPUTER_NOT_FOUND");
    problem(
      await w.people.outsider.post(screenPath(0, "/capabilities"), { mode: "view" }),
      404,
      "WORKSPACE_NOT_FOUND",
    );
    const unknown = { ...computer, id: "00000000-0000-0000-0000-000000000000" };
    problem(
      await w.people.member.post(screenPath(0, "/capabilities", unknown), { mode: "view" }),
      404,
      "COMPUTER_NOT_FOUND",
    );
    for (const screen of ["8", "-1", "x", "1.5"]) {
      problem(
        await w.people.member.post(screenPath(screen, "/capabilities"), { mode: "view" }),
        400,
        "VALIDATION_FAILED",
      );
    }
    problem(await mint(w.people.member, 0, "type"), 400, "VALIDATION_FAILED");
    problem(await t.client().post(screenPath(0, "/capabilities"), { mode: "view" }), 401, "UNAUTHENTICATED");
  });

  it("map provider refusals to problems: a stopped computer cannot be watched", async () => {
    const other = await createComputer(t, w.workspaceId, { bot: "Sleeper" });
    const { provider, ref } = await machineFor(t, other);
    await provider.stop(ref);
    problem(
      await w.people.member.post(screenPath(0, "/capabilities", other), { mode: "view" }),
      409,
      "MACHINE_STOPPED",
    );
    problem(await w.people.member.post(screenPath(0, "/control", other)), 409, "MACHINE_STOPPED");
    expect(
      await t.database.db
        .selectFrom("control_leases")
        .select("id")
        .where("computer_id", "=", other.id)
        .execute(),
    ).toEqual([]);
  });
});

describe("control", () => {
  it("cannot be minted without the screen's lease; viewers and viewer keys never", async () => {
    problem(await mint(w.people.member, 0, "control"), 409, "CONTROL_NOT_HELD");
    problem(await mint(w.people.viewer, 0, "control"), 403, "ROLE_FORBIDDEN");
    problem(await mint(t.client(), 0, "control", { apiKey: memberKey }), 409, "CONTROL_NOT_HELD");
    problem(await mint(t.client(), 0, "control", { apiKey: viewerKey }), 403, "ROLE_FORBIDDEN");
    problem(await take(w.people.viewer, 0), 403, "ROLE_FORBIDDEN");
    problem(
      await t.client().post(screenPath(0, "/control"), undefined, { apiKey: viewerKey }),
      403,
      "ROLE_FORBIDDEN",
    );
  });

  it("may be held by an API key (an embedding app's backend), which mints control under it", async () => {
    const key = t.client();
    const opts = { apiKey: memberKey };
    const granted = expectStatus(await key.post(screenPath(4, "/control"), undefined, opts), 201).json;
    const current = expectStatus(await w.people.viewer.get(screenPath(4, "/control")), 200).json;
    expect(current.holder).toMatchObject({ type: "api_key", name: expect.any(String) });
    // a person is told which key holds it; the key's own mint works, a person's does not
    expect(problem(await take(w.people.admin, 4), 409, "CONTROL_HELD").detail).toContain("API key");
    problem(await mint(w.people.admin, 4, "control"), 409, "CONTROL_NOT_HELD");
    const minted = expectStatus(await mint(key, 4, "control", opts), 201).json;
    const verified = await verifyCapability(keyring, minted.token, acceptAll);
    expect(verified).toMatchObject({ mode: "control", controlLeaseId: granted.leaseId });
    expect(verified.subject).toMatch(/^api_key:/);
    expectStatus(await key.post(screenPath(4, `/control/${granted.leaseId}/renew`), undefined, opts), 200);
    expectStatus(await key.delete(screenPath(4, `/control/${granted.leaseId}`), opts), 204);
    const [released] = await audits("screen.control_released", granted.leaseId);
    expect(released?.data).toMatchObject({ holder: { type: "api_key", id: verified.subject.slice(8) } });
  });

  it("is revoked when the key that holds it goes, and a key never revokes a person's lease", async () => {
    const made = expectStatus(
      await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
        name: "short-lived",
        role: "admin",
      }),
      201,
    ).json;
    const opts = { apiKey: made.key as string };
    const owners = expectStatus(await take(w.people.owner, 5), 201).json;
    problem(
      await t.client().delete(screenPath(5, `/control/${owners.leaseId}`), opts),
      403,
      "NOT_LEASE_HOLDER",
    );
    expect((await leaseRow(owners.leaseId)).released_at).toBeNull();
    expectStatus(await w.people.owner.delete(screenPath(5, `/control/${owners.leaseId}`)), 204);

    const held = expectStatus(await t.client().post(screenPath(5, "/control"), undefined, opts), 201).json;
    expectStatus(await w.people.owner.delete(`/v1/workspaces/${w.workspaceId}/api-keys/${made.id}`), 204);
    await revokeFormerControllers(t.api.deps);
    expect(await leaseRow(held.leaseId)).toMatchObject({ release_reason: "revoked" });
    const [revoked] = await audits("screen.control_revoked", held.leaseId);
    expect(revoked).toMatchObject({
      actor_type: "system",
      data: { holder: { type: "api_key", id: made.id } },
    });
  });

  it("is taken, minted, renewed and released by its holder, every step audited", async () => {
    const member = w.people.member;
    const granted = expectStatus(await take(member, 1), 201).json;
    expect(granted).toMatchObject({ leaseId: expect.any(String), fence: expect.any(Number), screen: 1 });
    const expiresIn = new Date(granted.expiresAt).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(14 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(15 * 60_000 + 5_000);
    const { leaseId } = granted;

    // Taking again is idempotent; someone else is told who holds it.
    expect(expectStatus(await take(member, 1), 200).json).toEqual(granted);
    const held = problem(await take(w.people.admin, 1), 409, "CONTROL_HELD");
    expect(held.detail).toContain(member.email);
    // Other screens are unaffected.
    const other = expectStatus(await take(w.people.admin, 6), 201).json;
    expectStatus(await w.people.admin.delete(screenPath(6, `/control/${other.leaseId}`)), 204);

    const current = expectStatus(await w.people.viewer.get(screenPath(1, "/control")), 200).json;
    expect(current).toEqual({
      leaseId,
      holder: { type: "user", id: member.userId, name: expect.any(String) },
      expiresAt: granted.expiresAt,
    });
    expectStatus(await t.client().get(screenPath(1, "/control"), { apiKey: viewerKey }), 200);

    // The control capability seals the control server's target, with a password derived from the lease.
    const minted = expectStatus(await mint(member, 1, "control"), 201);
    const verified = await verifyCapability(keyring, minted.json.token, acceptAll);
    expect(verified).toMatchObject({
      mode: "control",
      controlLeaseId: leaseId,
      screen: 1,
      subject: `user:${member.userId}`,
    });
    const password = t.api.deps.controlPassword(leaseId);
    const { provider, ref } = await machineFor(t, computer);
    expect(verified.target).toEqual(await provider.openControl(ref, 1, password));
    expect(verified.target).toMatchObject({ password });
    expect(minted.text).not.toContain(password);
    for (const text of t.responses) expect(text).not.toContain(password);
    expect((await audits("screen.capability_minted", leaseId))[0]?.data).toEqual({
      mode: "control",
      screen: 1,
      jti: verified.jti,
      leaseId,
    });
    problem(await mint(w.people.admin, 1, "control"), 409, "CONTROL_NOT_HELD");

    const renewed = expectStatus(await member.post(screenPath(1, `/control/${leaseId}/renew`)), 200).json;
    expect(renewed).toMatchObject({ leaseId, fence: granted.fence, screen: 1 });
    expect(new Date(renewed.expiresAt).getTime()).toBeGreaterThanOrEqual(
      new Date(granted.expiresAt).getTime(),
    );
    problem(await w.people.admin.post(screenPath(1, `/control/${leaseId}/renew`)), 403, "NOT_LEASE_HOLDER");

    expectStatus(await member.delete(screenPath(1, `/control/${leaseId}`)), 204);
    expect(await leaseRow(leaseId)).toMatchObject({ release_reason: "released" });
    problem(await w.people.viewer.get(screenPath(1, "/control")), 404, "CONTROL_LEASE_NOT_FOUND");
    problem(await member.delete(screenPath(1, `/control/${leaseId}`)), 409, "LEASE_ENDED");
    problem(await member.post(screenPath(1, `/control/${leaseId}/renew`)), 409, "LEASE_ENDED");
    problem(await mint(member, 1, "control"), 409, "CONTROL_NOT_HELD");
    problem(await member.delete(screenPath(1, "/control/no-such-lease")), 404, "CONTROL_LEASE_NOT_FOUND");
    // A lease id names one screen: the same id under another screen is not found.
    problem(await member.delete(screenPath(2, `/control/${leaseId}`)), 404, "CONTROL_LEASE_NOT_FOUND");

    const trail = async (action: string) =>
      (await audits(action, leaseId)).map((row) => [row.actor_id, row.data]);
    const facts = { leaseId, fence: granted.fence, screen: 1, holder: { type: "user", id: member.userId } };
    expect(await trail("screen.control_granted")).toEqual([
      [member.userId, { ...facts, expiresAt: granted.expiresAt }],
    ]);
    expect(await trail("screen.control_renewed")).toEqual([
      [member.userId, { ...facts, expiresAt: renewed.expiresAt }],
    ]);
    expect(await trail("screen.control_released")).toEqual([[member.userId, facts]]);
  });

  it("may be revoked by an admin or owner, not by another member", async () => {
    const lease = expectStatus(await take(w.people.owner, 2), 201).json;
    problem(
      await w.people.member.delete(screenPath(2, `/control/${lease.leaseId}`)),
      403,
      "NOT_LEASE_HOLDER",
    );
    problem(await w.people.viewer.delete(screenPath(2, `/control/${lease.leaseId}`)), 403, "ROLE_FORBIDDEN");
    expect((await leaseRow(lease.leaseId)).released_at).toBeNull();

    expectStatus(await w.people.admin.delete(screenPath(2, `/control/${lease.leaseId}`)), 204);
    expect(await leaseRow(lease.leaseId)).toMatchObject({ release_reason: "revoked" });
    const [revoked] = await audits("screen.control_revoked", lease.leaseId);
    expect(revoked).toMatchObject({
      actor_id: w.people.admin.userId,
      data: {
        leaseId: lease.leaseId,
        fence: lease.fence,
        screen: 2,
        holder: { type: "user", id: w.people.owner.userId },
      },
    });
  });

  it("cannot be ended by a stale release of an older lease", async () => {
    const first = expectStatus(await take(w.people.member, 3), 201).json;
    expectStatus(await w.people.member.delete(screenPath(3, `/control/${first.leaseId}`)), 204);
    const second = expectStatus(await take(w.people.admin, 3), 201).json;
    expect(second.fence).toBeGreaterThan(first.fence);

    problem(await w.people.member.delete(screenPath(3, `/control/${first.leaseId}`)), 409, "LEASE_ENDED");
    problem(await w.people.admin.delete(screenPath(3, `/control/${first.leaseId}`)), 409, "LEASE_ENDED");
    problem(await w.people.member.post(screenPath(3, `/control/${first.leaseId}/renew`)), 409, "LEASE_ENDED");
    const current = expectStatus(await w.people.viewer.get(screenPath(3, "/control")), 200).json;
    expect(current.leaseId).toBe(second.leaseId);
    expect((await leaseRow(second.leaseId)).released_at).toBeNull();
    expectStatus(await mint(w.people.admin, 3, "control"), 201);
    expectStatus(await w.people.admin.delete(screenPath(3, `/control/${second.leaseId}`)), 204);
  });

  it("goes to exactly one of two people taking it at the same moment", async () => {
    const [a, b] = await Promise.all([take(w.people.member, 6), take(w.people.admin, 6)]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([201, 409]);
    const [winner, loser] = a.status === 201 ? [a, b] : [b, a];
    expect(loser.json).toMatchObject({ code: "CONTROL_HELD" });
    const live = await t.database.db
      .selectFrom("control_leases")
      .select("id")
      .where("computer_id", "=", computer.id)
      .where("screen_index", "=", 6)
      .where("released_at", "is", null)
      .execute();
    expect(live).toEqual([{ id: winner.json.leaseId }]);
    const holder = winner === a ? w.people.member : w.people.admin;
    expectStatus(await holder.delete(screenPath(6, `/control/${winner.json.leaseId}`)), 204);
  });

  it("passes to the next taker once expired, even before the expiry loop saw it", async () => {
    const old = expectStatus(await take(w.people.owner, 4), 201).json;
    await t.database.db
      .updateTable("control_leases")
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where("id", "=", old.leaseId)
      .execute();
    problem(await w.people.owner.delete(screenPath(4, `/control/${old.leaseId}`)), 409, "LEASE_ENDED");
    const next = expectStatus(await take(w.people.member, 4), 201).json;
    expect(await leaseRow(old.leaseId)).toMatchObject({ release_reason: "expired" });
    const expired = await audits("screen.control_expired", old.leaseId);
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({ actor_type: "system", data: { fence: old.fence, screen: 4 } });
    expectStatus(await w.people.member.delete(screenPath(4, `/control/${next.leaseId}`)), 204);
  });
});

describe("the proxy's internal routes", () => {
  const redeem = (
    headers: Record<string, string>,
    body: unknown = { jti: "j", expiresAt: new Date().toISOString() },
  ) =>
    fetch(`${t.api.url}/internal/proxy/redemptions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  it("redeem a token id once across replicas", async () => {
    const authorization = `Bearer ${await mintServiceToken(keyring, "proxy")}`;
    const body = { jti: `jti-${Date.now()}`, expiresAt: new Date(Date.now() + 60_000).toISOString() };
    const first = await redeem({ authorization }, body);
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({ redeemed: true });
    const again = await redeem({ authorization }, body);
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ redeemed: false });
    expect((await redeem({ authorization }, { jti: "" })).status).toBe(400);
  });

  it("say which modes a capability's subject may still hold, and announce access changes", async () => {
    const authorization = `Bearer ${await mintServiceToken(keyring, "proxy")}`;
    const ask = async (grants: Array<{ subject: string; workspaceId: string }>) => {
      const response = await fetch(`${t.api.url}/internal/proxy/access`, {
        method: "POST",
        headers: { authorization, "content-type": "application/json" },
        body: JSON.stringify({ grants }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { grants: Array<{ modes: string[] }> }).grants.map((g) => g.modes);
    };
    const following = new AbortController();
    const stream = await fetch(`${t.api.url}/internal/proxy/access-changes`, {
      headers: { authorization, accept: "text/event-stream" },
      signal: following.signal,
    });
    if (!stream.body) throw new Error("no body");
    const events = new EventStreamReader(stream.body);
    expect(await events.next("ready")).toEqual({});
    const user = (client: TestClient) => ({ subject: `user:${client.userId}`, workspaceId: w.workspaceId });
    expect(
      await ask([
        user(w.people.member),
        user(w.people.viewer),
        user(w.people.outsider),
        { subject: `user:${w.people.member.userId}`, workspaceId: w.otherWorkspaceId },
        { subject: "api_key:nonexistent", workspaceId: w.workspaceId },
        { subject: "nonsense", workspaceId: w.workspaceId },
      ]),
    ).toEqual([["view", "control"], ["view"], [], [], [], []]);
    // a member key may view and control (under a lease it takes); revoked, it may do neither, and
    // the change is announced
    const created = expectStatus(
      await w.people.member.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "k", role: "member" }),
      201,
    ).json;
    const subject = { subject: `api_key:${created.id}`, workspaceId: w.workspaceId };
    expect(await ask([subject])).toEqual([["view", "control"]]);
    expectStatus(await w.people.member.delete(`/v1/workspaces/${w.workspaceId}/api-keys/${created.id}`), 204);
    expect(await events.next("changed")).toEqual({ workspaceId: w.workspaceId });
    expect(await ask([subject])).toEqual([[]]);
    following.abort();
  });

  it("answer anyone without a proxy service token exactly like an unknown path", async () => {
    const unknownPath = await fetch(`${t.api.url}/internal/proxy/nothing-here`);
    const expected = await unknownPath.json();
    const otherKeyring = new CapabilityKeyring({ current: randomBytes(32).toString("base64url") });
    const capability = await mintCapability(keyring, {
      subject: "user:x",
      workspaceId: w.workspaceId,
      computerId: computer.id,
      screen: 0,
      mode: "view",
      target: { kind: "vnc", host: "127.0.0.1", port: 1, password: "x" },
    });
    const refused: Record<string, string>[] = [
      {},
      { authorization: "Bearer nonsense" },
      { authorization: `Bearer ${await mintServiceToken(otherKeyring, "proxy")}` },
      // A screen capability is signed with the same keys, but is not a service token.
      { authorization: `Bearer ${capability.token}` },
      { "x-api-key": memberKey },
    ];
    for (const headers of refused) {
      for (const response of [
        await redeem(headers),
        await fetch(`${t.api.url}/internal/proxy/control-leases`, { headers }),
        await fetch(`${t.api.url}/internal/proxy/access-changes`, { headers }),
        await fetch(`${t.api.url}/internal/proxy/access`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({
            grants: [{ subject: `user:${w.people.owner.userId}`, workspaceId: w.workspaceId }],
          }),
        }),
      ]) {
        expect(response.status).toBe(404);
        const body = await response.json();
        expect({ ...body, instance: undefined, requestId: undefined }).toEqual({
          ...expected,
          instance: undefined,
          requestId: undefined,
        });
      }
    }
    const doc = expectStatus(await t.client().get("/openapi.json"), 200).json;
    expect(Object.keys(doc.paths).filter((path) => path.startsWith("/internal"))).toEqual([]);
  });

  it("stream a snapshot, then grants and ends within a second", async () => {
    const before = expectStatus(await take(w.people.owner, 5), 201).json;
    const stream = await serviceStream(t);
    const snapshot = await stream.next("snapshot");
    expect(snapshot.leases).toContainEqual({
      id: before.leaseId,
      workspaceId: w.workspaceId,
      computerId: computer.id,
      screen: 5,
      expiresAt: before.expiresAt,
    });
    expect(stream.events[0]?.event).toBe("snapshot");

    const granted = expectStatus(await take(w.people.member, 7), 201).json;
    expect(await stream.next("granted", (lease) => lease.id === granted.leaseId, 5_000)).toEqual({
      id: granted.leaseId,
      workspaceId: w.workspaceId,
      computerId: computer.id,
      screen: 7,
      expiresAt: granted.expiresAt,
    });
    const renewed = expectStatus(
      await w.people.member.post(screenPath(7, `/control/${granted.leaseId}/renew`)),
      200,
    ).json;
    expect(await stream.next("renewed", (lease) => lease.id === granted.leaseId, 5_000)).toMatchObject({
      expiresAt: renewed.expiresAt,
    });

    expectStatus(await w.people.member.delete(screenPath(7, `/control/${granted.leaseId}`)), 204);
    expect(await stream.next("ended", (end) => end.id === granted.leaseId, 5_000)).toEqual({
      id: granted.leaseId,
      reason: "released",
    });
    expectStatus(await w.people.owner.delete(screenPath(5, `/control/${before.leaseId}`)), 204);
    expect(await stream.next("ended", (end) => end.id === before.leaseId, 5_000)).toEqual({
      id: before.leaseId,
      reason: "released",
    });
  });
});

describe("expiry", () => {
  let short: TestApi;
  let world: World;
  let machine: Computer;
  let closed = false;
  const LEASE_MS = 1_500;

  beforeAll(async () => {
    short = await startTestApi({ SCREEN_CAPABILITY_KEY: KEY, CONTROL_LEASE_MS: String(LEASE_MS) });
    world = await buildWorld(short, "expiry");
    machine = await createComputer(short, world.workspaceId);
  });
  afterAll(async () => {
    if (!closed) await short?.close();
  });

  const path = (rest: string) =>
    `/v1/workspaces/${world.workspaceId}/computers/${machine.id}/screens/0${rest}`;

  it("ends a lease that is not renewed, audited, and tells the proxies within a second", async () => {
    const stream = await serviceStream(short);
    await stream.next("snapshot");
    const lease = expectStatus(await world.people.member.post(path("/control")), 201).json;
    await stream.next("granted", (granted) => granted.id === lease.leaseId);

    const renewed = expectStatus(
      await world.people.member.post(path(`/control/${lease.leaseId}/renew`)),
      200,
    ).json;
    const ended = await stream.next("ended", (end) => end.id === lease.leaseId, LEASE_MS + 2_000);
    const late = Date.now() - new Date(renewed.expiresAt).getTime();
    expect(ended).toEqual({ id: lease.leaseId, reason: "expired" });
    expect(late).toBeLessThan(1_000);

    problem(await world.people.member.get(path("/control")), 404, "CONTROL_LEASE_NOT_FOUND");
    problem(await world.people.member.post(path(`/control/${lease.leaseId}/renew`)), 409, "LEASE_ENDED");
    problem(
      await world.people.member.post(path("/capabilities"), { mode: "control" }),
      409,
      "CONTROL_NOT_HELD",
    );
    const expired = await short.database.db
      .selectFrom("audit_events")
      .selectAll()
      .where("action", "=", "screen.control_expired")
      .execute();
    expect(expired).toHaveLength(1);
    expect(expired[0]).toMatchObject({
      actor_type: "system",
      workspace_id: world.workspaceId,
      target_id: machine.id,
      data: { leaseId: lease.leaseId, fence: lease.fence, screen: 0 },
    });
  });

  it("ends open lease streams when the api shuts down", async () => {
    const stream = await serviceStream(short);
    await stream.next("snapshot");
    closed = true;
    await short.close();
    await expect(stream.ended).resolves.toBeUndefined();
  });
});
