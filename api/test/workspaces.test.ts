import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { join } from "../testing/world.ts";

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t?.close());

let seq = 0;
const fresh = (prefix: string) => `${prefix}-${++seq}@example.com`;

async function person(email = fresh("person")): Promise<TestClient> {
  const client = t.client();
  expectStatus(await client.signUp(email), 200);
  return client;
}

async function workspaceOf(owner: TestClient, name = "Team"): Promise<string> {
  return expectStatus(await owner.post("/v1/workspaces", { name }), 201).json.id;
}

async function memberIdOf(workspaceId: string, client: TestClient): Promise<string> {
  const row = await t.database.db
    .selectFrom("member")
    .select("id")
    .where("organizationId", "=", workspaceId)
    .where("userId", "=", client.userId)
    .executeTakeFirstOrThrow();
  return row.id;
}

async function members(caller: TestClient, workspaceId: string) {
  return expectStatus(await caller.get(`/v1/workspaces/${workspaceId}/members`), 200).json.items as Array<{
    id: string;
    userId: string;
    email: string;
    role: string;
  }>;
}

/** The audit rows for one action on one target. */
const audited = (action: string, targetId: string) =>
  t.database.db
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", targetId)
    .execute();

function expectProblem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 300)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
}

describe("workspace lifecycle", () => {
  it("creates a workspace whose creator is its owner, and audits it", async () => {
    const owner = await person("founder@example.com");
    const created = expectStatus(
      await owner.post("/v1/workspaces", { name: "Acme Robotics", slug: "acme" }),
      201,
    ).json;
    expect(created).toMatchObject({ name: "Acme Robotics", slug: "acme", role: "owner" });
    expect(typeof created.id).toBe("string");

    const listed = expectStatus(await owner.get("/v1/workspaces"), 200).json.items;
    expect(listed).toEqual([
      expect.objectContaining({ id: created.id, name: "Acme Robotics", role: "owner" }),
    ]);
    expect(expectStatus(await owner.get(`/v1/workspaces/${created.id}`), 200).json).toMatchObject({
      id: created.id,
      role: "owner",
    });
    expect(await members(owner, created.id)).toEqual([
      expect.objectContaining({ userId: owner.userId, email: "founder@example.com", role: "owner" }),
    ]);

    const [event, ...more] = await audited("workspace.created", created.id);
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      actor_type: "user",
      actor_id: owner.userId,
      workspace_id: created.id,
      target_type: "workspace",
      target_id: created.id,
    });

    // The slug is the workspace's: a second one cannot take it.
    const before = await t.database.db.selectFrom("organization").select("id").execute();
    expectProblem(await owner.post("/v1/workspaces", { name: "Copycat", slug: "acme" }), 409, "SLUG_TAKEN");
    expect(await t.database.db.selectFrom("organization").select("id").execute()).toHaveLength(before.length);

    // Someone else sees neither the workspace nor its members.
    const stranger = await person();
    expect(expectStatus(await stranger.get("/v1/workspaces"), 200).json.items).toEqual([]);
    expectProblem(await stranger.get(`/v1/workspaces/${created.id}`), 404, "WORKSPACE_NOT_FOUND");
  });

  it("invites someone who sees the invitation, accepts it and joins with the invited role", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner, "Invites");
    const email = fresh("invitee");
    const invitation = expectStatus(
      await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email, role: "member" }),
      201,
    ).json;
    expect(invitation).toMatchObject({
      workspaceId,
      workspaceName: "Invites",
      email,
      role: "member",
      status: "pending",
      inviterId: owner.userId,
    });

    const invitee = await person(email);
    expect(expectStatus(await invitee.get("/v1/invitations"), 200).json.items).toEqual([
      expect.objectContaining({ id: invitation.id, workspaceId, role: "member", status: "pending" }),
    ]);
    // Not a member until they accept.
    expectProblem(await invitee.get(`/v1/workspaces/${workspaceId}`), 404, "WORKSPACE_NOT_FOUND");

    const joined = expectStatus(await invitee.post(`/v1/invitations/${invitation.id}/accept`), 200).json;
    expect(joined).toMatchObject({ workspaceId, role: "member" });
    expect(joined.memberId).toBe(await memberIdOf(workspaceId, invitee));

    expect(expectStatus(await invitee.get("/v1/invitations"), 200).json.items).toEqual([]);
    expect(await members(owner, workspaceId)).toContainEqual(
      expect.objectContaining({ id: joined.memberId, userId: invitee.userId, email, role: "member" }),
    );
    expect(expectStatus(await invitee.get("/v1/workspaces"), 200).json.items).toEqual([
      expect.objectContaining({ id: workspaceId, role: "member" }),
    ]);
    const listed = expectStatus(await owner.get(`/v1/workspaces/${workspaceId}/invitations`), 200).json.items;
    expect(listed).toContainEqual(expect.objectContaining({ id: invitation.id, status: "accepted" }));
    // Accepting twice is refused.
    expectProblem(
      await invitee.post(`/v1/invitations/${invitation.id}/accept`),
      409,
      "INVITATION_NOT_PENDING",
    );

    expect(await audited("invitation.created", invitation.id)).toEqual([
      expect.objectContaining({
        actor_id: owner.userId,
        workspace_id: workspaceId,
        target_type: "invitation",
        data: expect.objectContaining({ email, role: "member" }),
      }),
    ]);
    expect(await audited("invitation.accepted", invitation.id)).toEqual([
      expect.objectContaining({
        actor_id: invitee.userId,
        workspace_id: workspaceId,
        target_type: "invitation",
        data: expect.objectContaining({ memberId: joined.memberId, role: "member" }),
      }),
    ]);
  });

  it("does not let anyone but the invitee accept an invitation", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const addressee = fresh("addressee");
    const invitation = expectStatus(
      await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email: addressee, role: "admin" }),
      201,
    ).json;

    const interloper = await person();
    expect(expectStatus(await interloper.get("/v1/invitations"), 200).json.items).toEqual([]);
    expectProblem(
      await interloper.post(`/v1/invitations/${invitation.id}/accept`),
      404,
      "INVITATION_NOT_FOUND",
    );
    expectProblem(
      await interloper.post("/v1/invitations/no-such-invitation/accept"),
      404,
      "INVITATION_NOT_FOUND",
    );
    expectProblem(await interloper.get(`/v1/workspaces/${workspaceId}`), 404, "WORKSPACE_NOT_FOUND");
    // The owner, already a member, cannot take it either.
    expectProblem(await owner.post(`/v1/invitations/${invitation.id}/accept`), 404, "INVITATION_NOT_FOUND");

    const row = await t.database.db
      .selectFrom("invitation")
      .select("status")
      .where("id", "=", invitation.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe("pending");
    expect((await members(owner, workspaceId)).map((m) => m.userId)).toEqual([owner.userId]);
    expect(await audited("invitation.accepted", invitation.id)).toEqual([]);
  });

  it("cancels an invitation, which then cannot be accepted and is listed as canceled", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const admin = await join(t, owner, workspaceId, fresh("admin"), "admin");
    const email = fresh("canceled");
    const invitation = expectStatus(
      await admin.post(`/v1/workspaces/${workspaceId}/invitations`, { email, role: "viewer" }),
      201,
    ).json;

    expect(
      expectStatus(await admin.delete(`/v1/workspaces/${workspaceId}/invitations/${invitation.id}`), 204)
        .text,
    ).toBe("");
    const listed = expectStatus(await owner.get(`/v1/workspaces/${workspaceId}/invitations`), 200).json.items;
    expect(listed).toContainEqual(expect.objectContaining({ id: invitation.id, status: "canceled" }));
    expectProblem(
      await admin.delete(`/v1/workspaces/${workspaceId}/invitations/${invitation.id}`),
      409,
      "INVITATION_NOT_PENDING",
    );

    const invitee = await person(email);
    expect(expectStatus(await invitee.get("/v1/invitations"), 200).json.items).toEqual([]);
    expectProblem(
      await invitee.post(`/v1/invitations/${invitation.id}/accept`),
      409,
      "INVITATION_NOT_PENDING",
    );
    expectProblem(await invitee.get(`/v1/workspaces/${workspaceId}`), 404, "WORKSPACE_NOT_FOUND");

    expect(await audited("invitation.canceled", invitation.id)).toEqual([
      expect.objectContaining({
        actor_id: admin.userId,
        workspace_id: workspaceId,
        target_type: "invitation",
        data: expect.objectContaining({ email, role: "viewer" }),
      }),
    ]);
  });

  it("refuses to invite a member, or someone already invited, with 409", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const member = await join(t, owner, workspaceId, fresh("already"), "member");
    const email = fresh("twice");
    const first = expectStatus(
      await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email, role: "viewer" }),
      201,
    ).json;

    expectProblem(
      await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email: member.email, role: "viewer" }),
      409,
      "ALREADY_MEMBER",
    );
    expectProblem(
      await owner.post(`/v1/workspaces/${workspaceId}/invitations`, {
        email: email.toUpperCase(),
        role: "admin",
      }),
      409,
      "ALREADY_INVITED",
    );
    const rows = await t.database.db
      .selectFrom("invitation")
      .select(["id", "role", "status"])
      .where("organizationId", "=", workspaceId)
      .orderBy("createdAt")
      .execute();
    expect(rows).toEqual([
      { id: expect.any(String), role: "member", status: "accepted" },
      { id: first.id, role: "viewer", status: "pending" },
    ]);

    // Once canceled, the person may be invited again.
    expectStatus(await owner.delete(`/v1/workspaces/${workspaceId}/invitations/${first.id}`), 204);
    expect(
      expectStatus(
        await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email, role: "admin" }),
        201,
      ).json,
    ).toMatchObject({ email, role: "admin", status: "pending" });
  });

  it("changes roles: an admin cannot grant or touch the owner role, an owner can", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const admin = await join(t, owner, workspaceId, fresh("admin"), "admin");
    const member = await join(t, owner, workspaceId, fresh("member"), "member");
    const memberId = await memberIdOf(workspaceId, member);
    const ownerMemberId = await memberIdOf(workspaceId, owner);
    const roleOf = async (client: TestClient) =>
      (await members(owner, workspaceId)).find((m) => m.userId === client.userId)?.role;

    expectProblem(
      await admin.patch(`/v1/workspaces/${workspaceId}/members/${memberId}`, { role: "owner" }),
      403,
      "OWNER_REQUIRED",
    );
    expectProblem(
      await admin.patch(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`, { role: "viewer" }),
      403,
      "OWNER_REQUIRED",
    );
    expectProblem(
      await admin.post(`/v1/workspaces/${workspaceId}/invitations`, { email: fresh("x"), role: "owner" }),
      403,
      "OWNER_REQUIRED",
    );
    expect(await roleOf(member)).toBe("member");
    expect(await roleOf(owner)).toBe("owner");

    const demoted = expectStatus(
      await admin.patch(`/v1/workspaces/${workspaceId}/members/${memberId}`, { role: "viewer" }),
      200,
    ).json;
    expect(demoted).toMatchObject({ id: memberId, userId: member.userId, role: "viewer" });
    expect(await roleOf(member)).toBe("viewer");
    // The new role takes effect at once.
    expectProblem(
      await member.get(`/v1/workspaces/${workspaceId}/connector-credentials`),
      403,
      "ROLE_FORBIDDEN",
    );

    expect(
      expectStatus(
        await owner.patch(`/v1/workspaces/${workspaceId}/members/${memberId}`, { role: "owner" }),
        200,
      ).json,
    ).toMatchObject({ id: memberId, role: "owner" });
    expect(await roleOf(member)).toBe("owner");
    expect(expectStatus(await member.get(`/v1/workspaces/${workspaceId}`), 200).json.role).toBe("owner");

    const changes = await audited("member.role_changed", memberId);
    expect(changes).toHaveLength(2);
    expect(changes).toContainEqual(
      expect.objectContaining({
        actor_id: admin.userId,
        workspace_id: workspaceId,
        target_type: "member",
        data: expect.objectContaining({ userId: member.userId, from: "member", to: "viewer" }),
      }),
    );
    expect(changes).toContainEqual(
      expect.objectContaining({
        actor_id: owner.userId,
        workspace_id: workspaceId,
        target_type: "member",
        data: expect.objectContaining({ from: "viewer", to: "owner" }),
      }),
    );
    expect(await audited("member.role_changed", ownerMemberId)).toEqual([]);
  });

  it("removes a member, who then cannot see the workspace", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const admin = await join(t, owner, workspaceId, fresh("admin"), "admin");
    const viewer = await join(t, owner, workspaceId, fresh("viewer"), "viewer");
    const viewerMemberId = await memberIdOf(workspaceId, viewer);
    const ownerMemberId = await memberIdOf(workspaceId, owner);
    expectStatus(await viewer.get(`/v1/workspaces/${workspaceId}`), 200);

    expectProblem(
      await admin.delete(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`),
      403,
      "OWNER_REQUIRED",
    );
    expect(
      expectStatus(await admin.delete(`/v1/workspaces/${workspaceId}/members/${viewerMemberId}`), 204).text,
    ).toBe("");

    expect((await members(owner, workspaceId)).map((m) => m.userId).sort()).toEqual(
      [owner.userId, admin.userId].sort(),
    );
    expectProblem(await viewer.get(`/v1/workspaces/${workspaceId}`), 404, "WORKSPACE_NOT_FOUND");
    expectProblem(await viewer.get(`/v1/workspaces/${workspaceId}/members`), 404, "WORKSPACE_NOT_FOUND");
    expect(expectStatus(await viewer.get("/v1/workspaces"), 200).json.items).toEqual([]);
    // Gone means gone: removing again finds nobody.
    expectProblem(
      await admin.delete(`/v1/workspaces/${workspaceId}/members/${viewerMemberId}`),
      404,
      "MEMBER_NOT_FOUND",
    );

    expect(await audited("member.removed", viewerMemberId)).toEqual([
      expect.objectContaining({
        actor_id: admin.userId,
        workspace_id: workspaceId,
        target_type: "member",
        data: expect.objectContaining({ userId: viewer.userId, role: "viewer" }),
      }),
    ]);
    expect(await audited("member.removed", ownerMemberId)).toEqual([]);
  });

  it("keeps the last owner: they cannot be demoted or removed", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const ownerMemberId = await memberIdOf(workspaceId, owner);

    expectProblem(
      await owner.patch(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`, { role: "admin" }),
      409,
      "LAST_OWNER",
    );
    expectProblem(
      await owner.delete(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`),
      409,
      "LAST_OWNER",
    );
    expect(await members(owner, workspaceId)).toEqual([
      expect.objectContaining({ id: ownerMemberId, role: "owner" }),
    ]);

    // With a second owner, the first may step down; then the second is the last one.
    const second = await join(t, owner, workspaceId, fresh("second-owner"), "owner");
    const secondMemberId = await memberIdOf(workspaceId, second);
    expect(
      expectStatus(
        await owner.patch(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`, { role: "admin" }),
        200,
      ).json,
    ).toMatchObject({ role: "admin" });
    expectProblem(
      await second.patch(`/v1/workspaces/${workspaceId}/members/${secondMemberId}`, { role: "member" }),
      409,
      "LAST_OWNER",
    );
    expectProblem(
      await second.delete(`/v1/workspaces/${workspaceId}/members/${secondMemberId}`),
      409,
      "LAST_OWNER",
    );
    const roles = Object.fromEntries((await members(second, workspaceId)).map((m) => [m.id, m.role]));
    expect(roles).toEqual({ [ownerMemberId]: "admin", [secondMemberId]: "owner" });
    expect(await audited("member.removed", secondMemberId)).toEqual([]);
  });

  it("answers 404 for another workspace's members and invitations", async () => {
    const ownerA = await person();
    const workspaceA = await workspaceOf(ownerA, "A");
    const ownerB = await person();
    const workspaceB = await workspaceOf(ownerB, "B");
    const memberB = await join(t, ownerB, workspaceB, fresh("member-b"), "member");
    const memberBId = await memberIdOf(workspaceB, memberB);
    const ownerBMemberId = await memberIdOf(workspaceB, ownerB);
    const invitationB = expectStatus(
      await ownerB.post(`/v1/workspaces/${workspaceB}/invitations`, {
        email: fresh("invited-b"),
        role: "viewer",
      }),
      201,
    ).json;

    expectProblem(
      await ownerA.patch(`/v1/workspaces/${workspaceA}/members/${memberBId}`, { role: "viewer" }),
      404,
      "MEMBER_NOT_FOUND",
    );
    expectProblem(
      await ownerA.delete(`/v1/workspaces/${workspaceA}/members/${memberBId}`),
      404,
      "MEMBER_NOT_FOUND",
    );
    expectProblem(
      await ownerA.delete(`/v1/workspaces/${workspaceA}/members/${ownerBMemberId}`),
      404,
      "MEMBER_NOT_FOUND",
    );
    expectProblem(
      await ownerA.delete(`/v1/workspaces/${workspaceA}/invitations/${invitationB.id}`),
      404,
      "INVITATION_NOT_FOUND",
    );
    // And B's workspace itself is invisible to A's owner, and the other way round.
    expectProblem(await ownerB.get(`/v1/workspaces/${workspaceA}/members`), 404, "WORKSPACE_NOT_FOUND");
    expectProblem(await ownerB.get(`/v1/workspaces/${workspaceA}/invitations`), 404, "WORKSPACE_NOT_FOUND");
    expectProblem(
      await ownerA.patch(`/v1/workspaces/${workspaceB}/members/${memberBId}`, { role: "viewer" }),
      404,
      "WORKSPACE_NOT_FOUND",
    );

    expect(await members(ownerB, workspaceB)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: memberBId, role: "member" }),
        expect.objectContaining({ id: ownerBMemberId, role: "owner" }),
      ]),
    );
    const listedB = expectStatus(await ownerB.get(`/v1/workspaces/${workspaceB}/invitations`), 200).json
      .items;
    expect(listedB).toContainEqual(expect.objectContaining({ id: invitationB.id, status: "pending" }));
    const auditedInA = await t.database.db
      .selectFrom("audit_events")
      .select("action")
      .where("workspace_id", "=", workspaceA)
      .execute();
    expect(auditedInA.map((e) => e.action)).toEqual(["workspace.created"]);
  });

  it("answers invalid input with 400 VALIDATION_FAILED and the errors", async () => {
    const owner = await person();
    const workspaceId = await workspaceOf(owner);
    const ownerMemberId = await memberIdOf(workspaceId, owner);
    const before = await t.database.db.selectFrom("organization").select("id").execute();

    const cases: Array<[RawResponse, string]> = [
      [await owner.post("/v1/workspaces", { name: "" }), "json.name"],
      [await owner.post("/v1/workspaces", { name: "Ok", slug: "Not A Slug!" }), "json.slug"],
      [await owner.post("/v1/workspaces", {}), "json.name"],
      [
        await owner.post(`/v1/workspaces/${workspaceId}/invitations`, {
          email: "not-an-email",
          role: "member",
        }),
        "json.email",
      ],
      [
        await owner.post(`/v1/workspaces/${workspaceId}/invitations`, { email: fresh("y"), role: "emperor" }),
        "json.role",
      ],
      [
        await owner.patch(`/v1/workspaces/${workspaceId}/members/${ownerMemberId}`, { role: "superuser" }),
        "json.role",
      ],
    ];
    for (const [response, path] of cases) {
      expectProblem(response, 400, "VALIDATION_FAILED");
      expect(Array.isArray(response.json.errors)).toBe(true);
      expect(response.json.errors).toContainEqual({ path, message: expect.any(String) });
    }

    expect(await t.database.db.selectFrom("organization").select("id").execute()).toHaveLength(before.length);
    expect(await members(owner, workspaceId)).toEqual([expect.objectContaining({ role: "owner" })]);
    const invitations = await t.database.db
      .selectFrom("invitation")
      .select("id")
      .where("organizationId", "=", workspaceId)
      .execute();
    expect(invitations).toEqual([]);
  });

  it("answers a malformed JSON body with a 400 problem JSON", async () => {
    const owner = await person();
    const before = await t.database.db.selectFrom("organization").select("id").execute();
    const response = await owner.post("/v1/workspaces", "{ this is not json");
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toContain("application/problem+json");
    expect(response.json).toMatchObject({
      status: 400,
      code: "MALFORMED_REQUEST",
      instance: "/v1/workspaces",
    });
    expect(await t.database.db.selectFrom("organization").select("id").execute()).toHaveLength(before.length);
  });
});
