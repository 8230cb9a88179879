import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "./support/harness.ts";
import { join } from "./support/world.ts";

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
    const accept = await invitee.post(`/v1/invitations/${invitation.id}/accept`);
    expect([404, 409]).toContain(accept.status);
    expect(accept.headers.get("content-type")).toContain("application/problem+json");
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
});
