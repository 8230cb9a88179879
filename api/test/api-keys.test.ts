import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LAST_USED_PRECISION_MS } from "../src/api-keys/verify.ts";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { buildWorld, join, type World } from "../testing/world.ts";

let t: TestApi;
let w: World;
beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "keys");
});
afterAll(() => t?.close());

const keysPath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/api-keys`;
const membersPath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/members`;
const auditPath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/audit-events`;

interface CreatedKey {
  id: string;
  key: string;
  role: string;
  createdBy: string;
  start: string | null;
  expiresAt: string | null;
}

async function createKey(person: TestClient, body: Record<string, unknown>): Promise<CreatedKey> {
  return expectStatus(await person.post(keysPath(), body), 201).json;
}

/** A client with no cookies: only the key speaks for it. */
const anonymous = () => t.client();

const auditRows = (action: string) =>
  t.database.db.selectFrom("audit_events").selectAll().where("action", "=", action).orderBy("id").execute();

async function memberIdOf(person: TestClient): Promise<string> {
  const members = expectStatus(await w.people.owner.get(membersPath()), 200).json.items as Array<{
    id: string;
    userId: string;
  }>;
  const member = members.find((m) => m.userId === person.userId);
  if (!member) throw new Error(`${person.email} is not a member`);
  return member.id;
}

function expectInvalidKey(response: RawResponse) {
  expect(response.status).toBe(401);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status: 401, code: "INVALID_API_KEY" });
}

describe("creating API keys", () => {
  it("shows the plaintext key once, in the 201 response, and stores only its hash", async () => {
    const { member } = w.people;
    const created = await createKey(member, { name: "ci runner" });
    expect(created.key).toMatch(/^cub_/);
    expect(created).toMatchObject({
      name: "ci runner",
      role: "member",
      createdBy: member.userId,
      enabled: true,
    });
    expect(created.key.startsWith(created.start ?? "\u0000")).toBe(true);
    expect(created.expiresAt).toBeNull();
    expect(created).toMatchObject({ lastUsedAt: null });

    const list = expectStatus(await member.get(keysPath()), 200);
    expect(list.json.items.map((k: { id: string }) => k.id)).toContain(created.id);
    expect(list.text).not.toContain(created.key);
    for (const item of list.json.items) expect(item).not.toHaveProperty("key");

    const row = await t.database.db
      .selectFrom("apikey")
      .selectAll()
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.key).not.toBe(created.key);
    expect(row.key).not.toContain(created.key);
    expect(row.key).not.toContain(created.key.slice(4));
    expect(row.key).toBe(createHash("sha256").update(created.key).digest("base64url"));
    expect(row.referenceId).toBe(w.workspaceId);
    expect(JSON.parse(row.metadata ?? "{}")).toEqual({ role: "member", createdBy: member.userId });

    const audit = (await auditRows("api_key.created")).filter((e) => e.target_id === created.id);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      workspace_id: w.workspaceId,
      actor_type: "user",
      actor_id: member.userId,
      actor_label: member.email,
      target_type: "api_key",
    });
    expect(audit[0]?.data).toMatchObject({ name: "ci runner", role: "member", expiresAt: null });
    expect(JSON.stringify(audit[0]?.data)).not.toContain(created.key);
  });

  it("refuses a role above the creator's, and keys for viewers", async () => {
    const before = await t.database.db.selectFrom("apikey").select("id").execute();
    const tooHigh = await w.people.member.post(keysPath(), { name: "escalate", role: "admin" });
    expect(tooHigh.status).toBe(403);
    expect(tooHigh.json).toMatchObject({ code: "ROLE_FORBIDDEN" });
    const ownerKey = await w.people.admin.post(keysPath(), { name: "escalate", role: "owner" });
    expect(ownerKey.status).toBe(403);
    expect(ownerKey.json).toMatchObject({ code: "ROLE_FORBIDDEN" });
    const viewer = await w.people.viewer.post(keysPath(), { name: "viewer key", role: "viewer" });
    expect(viewer.status).toBe(403);
    expect(viewer.json).toMatchObject({ code: "ROLE_FORBIDDEN" });
    const after = await t.database.db.selectFrom("apikey").select("id").execute();
    expect(after).toHaveLength(before.length);
  });

  it("sets expiresAt from expiresInDays, and an expired key stops working", async () => {
    const startedAt = Date.now();
    const created = await createKey(w.people.admin, { name: "weekly", expiresInDays: 7 });
    const week = 7 * 86_400_000;
    const expiresAt = new Date(created.expiresAt ?? 0).getTime();
    expect(expiresAt).toBeGreaterThanOrEqual(startedAt + week - 5_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + week + 5_000);
    const row = await t.database.db
      .selectFrom("apikey")
      .select("expiresAt")
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.expiresAt?.toISOString()).toBe(created.expiresAt);

    for (const expiresInDays of [0, 366, 1.5]) {
      const invalid = await w.people.admin.post(keysPath(), { name: "bad", expiresInDays });
      expect(invalid.status).toBe(400);
      expect(invalid.json).toMatchObject({ code: "VALIDATION_FAILED" });
    }

    expectStatus(await anonymous().get(membersPath(), { apiKey: created.key }), 200);
    await t.database.db
      .updateTable("apikey")
      .set({ expiresAt: new Date(Date.now() - 60_000) })
      .where("id", "=", created.id)
      .execute();
    expectInvalidKey(await anonymous().get(membersPath(), { apiKey: created.key }));
  });
});

describe("authenticating with an API key", () => {
  it("works via X-Api-Key and via Authorization: Bearer, and audits every use by route", async () => {
    const { admin } = w.people;
    const created = await createKey(admin, { name: "automation", role: "member" });
    const caller = anonymous();

    const viaHeader = expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);
    expect(viaHeader.json.items.map((m: { userId: string }) => m.userId)).toContain(admin.userId);
    const viaBearer = await caller.get(membersPath(), {
      headers: { authorization: `Bearer ${created.key}` },
    });
    expectStatus(viaBearer, 200);
    const me = expectStatus(
      await caller.get("/v1/me", { headers: { authorization: `bearer ${created.key}` } }),
      200,
    );
    expect(me.json).toEqual({
      kind: "api_key",
      keyId: created.id,
      name: "automation",
      workspaceId: w.workspaceId,
      role: "member",
    });
    // People-only routes stay closed to keys, even for a key's own kind of work.
    const keyMakingKeys = await caller.post(keysPath(), { name: "child" }, { apiKey: created.key });
    expect(keyMakingKeys.status).toBe(403);
    expect(keyMakingKeys.json).toMatchObject({ code: "PERSON_REQUIRED" });
    const listed = expectStatus(await admin.get(keysPath()), 200).json.items.find(
      (k: { id: string }) => k.id === created.id,
    );
    expect(new Date(listed.lastUsedAt).getTime()).toBeGreaterThanOrEqual(
      new Date(listed.createdAt).getTime(),
    );
    // Without the key, the same client is nobody.
    expect((await caller.get(membersPath())).status).toBe(401);

    const used = (await auditRows("api_key.used")).filter((e) => e.actor_id === created.id);
    expect(
      used.map((e) => ({
        actorType: e.actor_type,
        workspace: e.workspace_id,
        target: e.target_id,
        ...e.data,
      })),
    ).toEqual([
      {
        actorType: "api_key",
        workspace: w.workspaceId,
        target: created.id,
        method: "GET",
        route: "/v1/workspaces/:workspaceId/members",
        status: 200,
      },
      {
        actorType: "api_key",
        workspace: w.workspaceId,
        target: created.id,
        method: "GET",
        route: "/v1/workspaces/:workspaceId/members",
        status: 200,
      },
      {
        actorType: "api_key",
        workspace: w.workspaceId,
        target: created.id,
        method: "GET",
        route: "/v1/me",
        status: 200,
      },
      {
        actorType: "api_key",
        workspace: w.workspaceId,
        target: created.id,
        method: "POST",
        route: "/v1/workspaces/:workspaceId/api-keys",
        status: 403,
      },
    ]);
    for (const event of used) {
      expect(event.actor_label).toBe("automation");
      expect(event.ip).toBe("127.0.0.1");
      expect(event.request_id).toBeTruthy();
    }
  });

  it("records when a key was last used to the minute, without writing its row on every request", async () => {
    const created = await createKey(w.people.admin, { name: "busy", role: "member" });
    const caller = anonymous();
    const lastRequest = async () =>
      (
        await t.database.db
          .selectFrom("apikey")
          .select("lastRequest")
          .where("id", "=", created.id)
          .executeTakeFirstOrThrow()
      ).lastRequest;
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);
    const first = await lastRequest();
    expect(first).not.toBeNull();
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);
    expect(await lastRequest()).toEqual(first);

    const stale = new Date(Date.now() - LAST_USED_PRECISION_MS - 1_000);
    await t.database.db
      .updateTable("apikey")
      .set({ lastRequest: stale })
      .where("id", "=", created.id)
      .execute();
    const before = Date.now();
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);
    expect((await lastRequest())?.getTime()).toBeGreaterThanOrEqual(before - 1_000);
  });

  it("reaches only the key's own workspace", async () => {
    const created = await createKey(w.people.owner, { name: "scoped", role: "admin" });
    const caller = anonymous();
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);
    for (const path of [membersPath(w.otherWorkspaceId), `/v1/workspaces/${w.otherWorkspaceId}`]) {
      const response = await caller.get(path, { apiKey: created.key });
      expect(response.status).toBe(404);
      expect(response.json).toMatchObject({ code: "WORKSPACE_NOT_FOUND" });
      expect(response.text).not.toContain("Elsewhere keys");
    }
    const workspaces = expectStatus(await caller.get("/v1/workspaces", { apiKey: created.key }), 200);
    expect(workspaces.json.items.map((ws: { id: string }) => ws.id)).toEqual([w.workspaceId]);

    // And the other way round: the outsider's key does not reach this workspace.
    const outsiderKey = expectStatus(
      await w.people.outsider.post(keysPath(w.otherWorkspaceId), { name: "theirs", role: "owner" }),
      201,
    ).json.key;
    expectStatus(await caller.get(membersPath(w.otherWorkspaceId), { apiKey: outsiderKey }), 200);
    expect((await caller.get(membersPath(), { apiKey: outsiderKey })).status).toBe(404);
  });

  it("rejects garbage keys with 401 and audits the attempt", async () => {
    const caller = anonymous();
    const usedBefore = (await auditRows("api_key.used")).length;
    const garbage = [`cub_${"x".repeat(40)}`, "not-a-key-at-all", "cub_"];
    for (const key of garbage) expectInvalidKey(await caller.get(membersPath(), { apiKey: key }));
    expectInvalidKey(await caller.get("/v1/me", { headers: { authorization: "Bearer zzzzzzzzzzzzzzzz" } }));

    const rejected = await auditRows("api_key.rejected");
    const starts = rejected.map((e) => e.data.keyStart);
    for (const key of garbage) expect(starts).toContain(key.slice(0, 8));
    expect(starts).toContain("zzzzzzzz");
    for (const event of rejected) {
      expect(event).toMatchObject({ actor_type: "anonymous", actor_id: null, ip: "127.0.0.1" });
      expect(event.data.reason).toEqual(expect.any(String));
    }
    // A rejected key is not "used".
    expect(await auditRows("api_key.used")).toHaveLength(usedBefore);
  });
});

describe("a key's authority follows its creator", () => {
  it("is capped when the creator is demoted", async () => {
    const { owner } = w.people;
    const admin = await join(t, owner, w.workspaceId, "demoted-admin-keys@example.com", "admin");
    const created = await createKey(admin, { name: "auditor", role: "admin" });
    expect(created.role).toBe("admin");
    const caller = anonymous();

    expectStatus(await caller.get(auditPath(), { apiKey: created.key }), 200);
    expect(expectStatus(await caller.get("/v1/me", { apiKey: created.key }), 200).json.role).toBe("admin");

    const memberId = await memberIdOf(admin);
    expectStatus(await owner.patch(`${membersPath()}/${memberId}`, { role: "viewer" }), 200);

    const refused = await caller.get(auditPath(), { apiKey: created.key });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ code: "ROLE_FORBIDDEN" });
    expect(expectStatus(await caller.get("/v1/me", { apiKey: created.key }), 200).json.role).toBe("viewer");
    // What a viewer may do, the key still may.
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);

    // Promoting the creator back restores the key's own role, never more.
    expectStatus(await owner.patch(`${membersPath()}/${memberId}`, { role: "owner" }), 200);
    expect(expectStatus(await caller.get("/v1/me", { apiKey: created.key }), 200).json.role).toBe("admin");
  });

  it("stops working when the creator leaves the workspace", async () => {
    const { owner } = w.people;
    const leaver = await join(t, owner, w.workspaceId, "leaver-keys@example.com", "member");
    const created = await createKey(leaver, { name: "orphan" });
    const caller = anonymous();
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);

    expectStatus(await owner.delete(`${membersPath()}/${await memberIdOf(leaver)}`), 204);
    expectInvalidKey(await caller.get(membersPath(), { apiKey: created.key }));
    expectInvalidKey(await caller.get("/v1/me", { headers: { authorization: `Bearer ${created.key}` } }));

    const rejected = (await auditRows("api_key.rejected")).filter(
      (e) => e.data.keyStart === created.key.slice(0, 8),
    );
    expect(rejected.map((e) => e.data.reason)).toEqual([
      "KEY_CREATOR_LEFT_WORKSPACE",
      "KEY_CREATOR_LEFT_WORKSPACE",
    ]);
  });
});

describe("revoking API keys", () => {
  it("makes the key fail with INVALID_API_KEY and audits revocation and rejection", async () => {
    const { member } = w.people;
    const created = await createKey(member, { name: "short-lived" });
    const caller = anonymous();
    expectStatus(await caller.get(membersPath(), { apiKey: created.key }), 200);

    const revoked = await member.delete(`${keysPath()}/${created.id}`);
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe("");

    expectInvalidKey(await caller.get(membersPath(), { apiKey: created.key }));
    expectInvalidKey(await caller.get("/v1/me", { headers: { authorization: `Bearer ${created.key}` } }));

    const listed = expectStatus(await member.get(keysPath()), 200).json.items.find(
      (k: { id: string }) => k.id === created.id,
    );
    expect(listed).toMatchObject({ id: created.id, enabled: false });
    const row = await t.database.db
      .selectFrom("apikey")
      .select("enabled")
      .where("id", "=", created.id)
      .executeTakeFirstOrThrow();
    expect(row.enabled).toBe(false);

    // Revoking again is harmless and not audited twice.
    expect((await member.delete(`${keysPath()}/${created.id}`)).status).toBe(204);
    const revokedEvents = (await auditRows("api_key.revoked")).filter((e) => e.target_id === created.id);
    expect(revokedEvents).toHaveLength(1);
    expect(revokedEvents[0]).toMatchObject({
      workspace_id: w.workspaceId,
      actor_type: "user",
      actor_id: member.userId,
      target_type: "api_key",
    });

    const rejected = (await auditRows("api_key.rejected")).filter(
      (e) => e.data.keyStart === created.key.slice(0, 8),
    );
    expect(rejected).toHaveLength(2);
    for (const event of rejected) expect(event.data.reason).toBe("KEY_DISABLED");
    const used = (await auditRows("api_key.used")).filter((e) => e.actor_id === created.id);
    expect(used).toHaveLength(1);
  });

  it("lets a member see and revoke only their own keys, and an admin any", async () => {
    const { member, admin, owner } = w.people;
    const adminKey = await createKey(admin, { name: "admin's", role: "member" });
    const memberKey = await createKey(member, { name: "member's" });

    const memberList = expectStatus(await member.get(keysPath()), 200).json.items as CreatedKey[];
    expect(memberList.map((k) => k.id)).toContain(memberKey.id);
    expect(memberList.map((k) => k.id)).not.toContain(adminKey.id);
    expect(memberList.every((k) => k.createdBy === member.userId)).toBe(true);

    const denied = await member.delete(`${keysPath()}/${adminKey.id}`);
    expect(denied.status).toBe(404);
    expect(denied.json).toMatchObject({ code: "API_KEY_NOT_FOUND" });
    expectStatus(await anonymous().get(membersPath(), { apiKey: adminKey.key }), 200);

    const adminList = expectStatus(await admin.get(keysPath()), 200).json.items as CreatedKey[];
    expect(adminList.map((k) => k.id)).toEqual(expect.arrayContaining([adminKey.id, memberKey.id]));
    const ownerList = expectStatus(await owner.get(keysPath()), 200).json.items as CreatedKey[];
    expect(ownerList.map((k) => k.id)).toEqual(expect.arrayContaining([adminKey.id, memberKey.id]));

    expectStatus(await admin.delete(`${keysPath()}/${memberKey.id}`), 204);
    expectInvalidKey(await anonymous().get(membersPath(), { apiKey: memberKey.key }));
    const revoked = (await auditRows("api_key.revoked")).filter((e) => e.target_id === memberKey.id);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]?.actor_id).toBe(admin.userId);

    // Keys of another workspace are not found through this one, not even by an owner.
    const theirs = expectStatus(
      await w.people.outsider.post(keysPath(w.otherWorkspaceId), { name: "elsewhere" }),
      201,
    ).json;
    const crossRevoke = await owner.delete(`${keysPath()}/${theirs.id}`);
    expect(crossRevoke.status).toBe(404);
    expectStatus(await anonymous().get(membersPath(w.otherWorkspaceId), { apiKey: theirs.key }), 200);
    const unknown = await owner.delete(`${keysPath()}/no-such-key`);
    expect(unknown.status).toBe(404);
  });

  it("never returns a key's plaintext after creation", async () => {
    const keys = (await t.database.db.selectFrom("apikey").select(["id", "key"]).execute()).map((k) => k.key);
    expect(keys.length).toBeGreaterThan(5);
    const createdResponses = t.responses.filter((text) => text.includes('"key":"cub_'));
    // Each creation response carries its key; nothing else ever does.
    const plaintexts = createdResponses.map((text) => JSON.parse(text).key as string);
    expect(plaintexts).toHaveLength((await auditRows("api_key.created")).length);
    for (const plaintext of plaintexts) {
      expect(t.responses.filter((text) => text.includes(plaintext))).toHaveLength(1);
    }
    for (const hash of keys) {
      expect(t.responses.some((text) => text.includes(hash))).toBe(false);
    }
  });
});
