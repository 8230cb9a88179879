import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
/** Extra history: role changes, a removal, an invitation by the admin, an API key and its use. */
let viewerMemberId: string;
let apiKeyId: string;

interface AuditEventJson {
  id: number;
  occurredAt: string;
  workspaceId: string | null;
  actor: { type: string; id: string | null; label: string | null };
  action: string;
  target: { type: string; id: string } | null;
  ip: string | null;
  requestId: string | null;
  data: Record<string, unknown>;
}

interface AuditPageJson {
  items: AuditEventJson[];
  nextCursor: string | null;
}

const auditPath = (workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/audit-events`;
const membersPath = () => `/v1/workspaces/${w.workspaceId}/members`;

async function page(person: TestClient, query = "", workspaceId = w.workspaceId): Promise<AuditPageJson> {
  return expectStatus(await person.get(`${auditPath(workspaceId)}${query}`), 200).json;
}

/** Every page of a query, following nextCursor. */
async function walk(person: TestClient, query: string, limit: number) {
  const pages: AuditPageJson[] = [];
  let cursor: string | null = null;
  do {
    const cursorPart: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const next = await page(person, `?limit=${limit}${query}${cursorPart}`);
    pages.push(next);
    cursor = next.nextCursor;
  } while (cursor !== null && pages.length < 500);
  return pages;
}

const workspaceRowsNewestFirst = (workspaceId: string) =>
  t.database.db
    .selectFrom("audit_events")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .orderBy("id", "desc")
    .execute();

function expectProblem(response: RawResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
}

async function memberIdOf(person: TestClient): Promise<string> {
  const members = expectStatus(await w.people.owner.get(membersPath()), 200).json.items as Array<{
    id: string;
    userId: string;
  }>;
  const member = members.find((m) => m.userId === person.userId);
  if (!member) throw new Error(`${person.email} is not a member`);
  return member.id;
}

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "audit");
  const { owner, admin } = w.people;
  viewerMemberId = await memberIdOf(w.people.viewer);
  expectStatus(await owner.patch(`${membersPath()}/${viewerMemberId}`, { role: "member" }), 200);
  expectStatus(await owner.patch(`${membersPath()}/${viewerMemberId}`, { role: "viewer" }), 200);
  const leaver = await join(t, admin, w.workspaceId, "leaver-audit@example.com", "member");
  expectStatus(await admin.delete(`${membersPath()}/${await memberIdOf(leaver)}`), 204);
  const key = expectStatus(
    await admin.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "auditor", role: "admin" }),
    201,
  ).json;
  apiKeyId = key.id;
  expectStatus(await t.client().get(membersPath(), { apiKey: key.key }), 200);
  expectStatus(await t.client().get(auditPath(), { apiKey: key.key }), 200);
  // Some history in the outsider's workspace as well.
  await join(t, w.people.outsider, w.otherWorkspaceId, "their-member-audit@example.com", "member");
});
afterAll(() => t?.close());

describe("the audit_events table", () => {
  it("refuses UPDATE, DELETE and TRUNCATE, leaving every row as it was", async () => {
    const { db } = t.database;
    const before = await db.selectFrom("audit_events").selectAll().orderBy("id").execute();
    expect(before.length).toBeGreaterThan(10);
    const first = before[0];
    if (!first) throw new Error("expected audit rows");

    const attempts: Array<[string, () => Promise<unknown>]> = [
      ["update all", () => sql`update audit_events set action = 'tampered'`.execute(db)],
      [
        "update one",
        () => sql`update audit_events set actor_label = 'someone else' where id = ${first.id}`.execute(db),
      ],
      [
        "update data",
        () => sql`update audit_events set data = '{}'::jsonb where id = ${first.id}`.execute(db),
      ],
      ["delete one", () => sql`delete from audit_events where id = ${first.id}`.execute(db)],
      ["delete all", () => sql`delete from audit_events`.execute(db)],
      ["truncate", () => sql`truncate audit_events`.execute(db)],
      ["query builder update", () => db.updateTable("audit_events").set({ action: "tampered" }).execute()],
      ["query builder delete", () => db.deleteFrom("audit_events").where("id", "=", first.id).execute()],
    ];
    for (const [name, attempt] of attempts) {
      await expect(attempt(), name).rejects.toThrow(/append-only/);
    }

    const after = await db.selectFrom("audit_events").selectAll().orderBy("id").execute();
    expect(after).toEqual(before);

    // Appending still works.
    expectStatus(await w.people.owner.patch(`${membersPath()}/${viewerMemberId}`, { role: "viewer" }), 200);
    const appended = await db.selectFrom("audit_events").selectAll().orderBy("id").execute();
    expect(appended.length).toBe(before.length + 1);
    expect(appended.slice(0, before.length)).toEqual(before);
  });
});

describe("GET /v1/workspaces/{id}/audit-events", () => {
  it("is for admins and owners (people or keys) of the workspace", async () => {
    const { owner, admin, member, viewer, outsider } = w.people;
    expectStatus(await owner.get(auditPath()), 200);
    expectStatus(await admin.get(auditPath()), 200);
    expectProblem(await member.get(auditPath()), 403, "ROLE_FORBIDDEN");
    expectProblem(await viewer.get(auditPath()), 403, "ROLE_FORBIDDEN");
    expectProblem(await outsider.get(auditPath()), 404, "WORKSPACE_NOT_FOUND");
    expectProblem(await t.client().get(auditPath()), 401, "UNAUTHENTICATED");
    expectProblem(await admin.get("/v1/deployment/audit-events"), 404, "NOT_FOUND");
  });

  it("lists the workspace's events newest first, exactly as stored", async () => {
    const { items, nextCursor } = await page(w.people.admin, "?limit=200");
    const rows = await workspaceRowsNewestFirst(w.workspaceId);
    expect(rows.length).toBeGreaterThan(10);
    expect(rows.length).toBeLessThan(200);
    expect(nextCursor).toBeNull();
    expect(items.map((e) => e.id)).toEqual(rows.map((r) => r.id));
    for (let i = 1; i < items.length; i++) {
      const [newer, older] = [items[i - 1], items[i]];
      if (!newer || !older) throw new Error("unreachable");
      expect(newer.id).toBeGreaterThan(older.id);
      expect(newer.occurredAt >= older.occurredAt).toBe(true);
    }
    const actions = items.map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        "workspace.created",
        "invitation.created",
        "invitation.accepted",
        "member.role_changed",
        "member.removed",
        "api_key.created",
        "api_key.used",
      ]),
    );
    const created = items.find((e) => e.action === "workspace.created");
    expect(created).toMatchObject({
      workspaceId: w.workspaceId,
      actor: { type: "user", id: w.people.owner.userId, label: w.people.owner.email },
      target: { type: "workspace", id: w.workspaceId },
      data: { name: "Team audit" },
    });
    expect(new Date(created?.occurredAt ?? "").toISOString()).toBe(created?.occurredAt);

    // The default page size is 50.
    expect((await page(w.people.admin)).items).toHaveLength(Math.min(50, rows.length));
  });

  it("filters by actor, action (exact or prefix), target and time", async () => {
    const { admin, owner } = w.people;
    const all = (await page(admin, "?limit=200")).items;

    const byAdmin = (await page(admin, `?limit=200&actorId=${admin.userId}`)).items;
    expect(byAdmin.length).toBeGreaterThan(2);
    expect(byAdmin).toEqual(all.filter((e) => e.actor.id === admin.userId));

    const byKeys = (await page(admin, "?limit=200&actorType=api_key")).items;
    expect(byKeys.length).toBeGreaterThanOrEqual(2);
    expect(byKeys).toEqual(all.filter((e) => e.actor.type === "api_key"));
    expect(byKeys.every((e) => e.actor.id === apiKeyId && e.action === "api_key.used")).toBe(true);
    expect(byKeys.map((e) => e.data.route)).toEqual(
      expect.arrayContaining([
        "/v1/workspaces/:workspaceId/members",
        "/v1/workspaces/:workspaceId/audit-events",
      ]),
    );

    const exact = (await page(admin, "?limit=200&action=invitation.created")).items;
    expect(exact.length).toBeGreaterThanOrEqual(4);
    expect(exact).toEqual(all.filter((e) => e.action === "invitation.created"));

    const prefixed = (await page(admin, "?limit=200&action=member.*")).items;
    expect(new Set(prefixed.map((e) => e.action))).toEqual(
      new Set(["member.role_changed", "member.removed"]),
    );
    expect(prefixed).toEqual(all.filter((e) => e.action.startsWith("member.")));
    // No wildcard means exact; LIKE's own wildcards are taken literally.
    for (const literal of ["member", "member.", "member.%", "m%.*", "member_role_changed", "_ember.*"]) {
      expect((await page(admin, `?limit=200&action=${encodeURIComponent(literal)}`)).items, literal).toEqual(
        [],
      );
    }

    const combined = (await page(admin, `?limit=200&action=member.*&actorId=${owner.userId}&actorType=user`))
      .items;
    expect(combined.length).toBeGreaterThanOrEqual(2);
    expect(combined).toEqual(
      all.filter(
        (e) => e.action.startsWith("member.") && e.actor.id === owner.userId && e.actor.type === "user",
      ),
    );

    const byTargetType = (await page(admin, "?limit=200&targetType=member")).items;
    expect(byTargetType).toEqual(all.filter((e) => e.target?.type === "member"));
    const byTarget = (await page(admin, `?limit=200&targetType=member&targetId=${viewerMemberId}`)).items;
    expect(byTarget.length).toBeGreaterThanOrEqual(2);
    expect(byTarget).toEqual(
      all.filter((e) => e.target?.type === "member" && e.target.id === viewerMemberId),
    );
    expect(byTarget.every((e) => e.action === "member.role_changed")).toBe(true);
    expect((await page(admin, "?limit=200&targetId=nothing-has-this-id")).items).toEqual([]);

    // A pivot in the middle splits the trail into [since, ∞) and (−∞, until) with nothing lost.
    const pivot = all[Math.floor(all.length / 2)];
    if (!pivot) throw new Error("expected events");
    const since = (await page(admin, `?limit=200&since=${pivot.occurredAt}`)).items;
    const until = (await page(admin, `?limit=200&until=${pivot.occurredAt}`)).items;
    expect(since.map((e) => e.id)).toContain(pivot.id);
    expect(until.map((e) => e.id)).not.toContain(pivot.id);
    expect(since.every((e) => e.occurredAt >= pivot.occurredAt)).toBe(true);
    expect(until.every((e) => e.occurredAt < pivot.occurredAt)).toBe(true);
    expect([...since, ...until].map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(
      (await page(admin, `?limit=200&since=${pivot.occurredAt}&until=${pivot.occurredAt}`)).items,
    ).toEqual([]);
    // The same instant written with an offset means the same thing.
    const shifted = new Date(new Date(pivot.occurredAt).getTime() + 2 * 3600_000)
      .toISOString()
      .replace("Z", "+02:00");
    const sinceWithOffset = (await page(admin, `?limit=200&since=${encodeURIComponent(shifted)}`)).items;
    expect(sinceWithOffset.map((e) => e.id)).toEqual(since.map((e) => e.id));
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await page(admin, `?limit=200&since=${future}`)).items).toEqual([]);
    expect((await page(admin, `?limit=200&until=${future}`)).items.map((e) => e.id)).toEqual(
      all.map((e) => e.id),
    );

    expectProblem(await admin.get(`${auditPath()}?actorType=robot`), 400, "VALIDATION_FAILED");
    expectProblem(await admin.get(`${auditPath()}?since=yesterday`), 400, "VALIDATION_FAILED");
  });

  it("pages with a cursor: no duplicates, no gaps, a null cursor at the end", async () => {
    const { admin } = w.people;
    const all = (await page(admin, "?limit=200")).items.map((e) => e.id);
    const pages = await walk(admin, "", 2);
    expect(pages.length).toBe(Math.ceil(all.length / 2));
    for (const [index, p] of pages.entries()) {
      const last = index === pages.length - 1;
      expect(p.items.length, `page ${index}`).toBe(last ? all.length - 2 * index : 2);
      expect(p.nextCursor === null).toBe(last);
    }
    const walked = pages.flatMap((p) => p.items.map((e) => e.id));
    expect(new Set(walked).size).toBe(walked.length);
    expect(walked).toEqual(all);

    // Filters hold across pages.
    const filteredAll = (await page(admin, "?limit=200&action=invitation.*")).items.map((e) => e.id);
    expect(filteredAll.length).toBeGreaterThan(3);
    const filteredPages = await walk(admin, "&action=invitation.*", 1);
    expect(filteredPages.flatMap((p) => p.items.map((e) => e.id))).toEqual(filteredAll);
    expect(filteredPages.at(-1)?.nextCursor).toBeNull();
  });

  it("rejects bad cursors and limits", async () => {
    const { admin } = w.people;
    const garbageCursors = [
      "not-a-cursor",
      Buffer.from("audit:abc").toString("base64url"),
      Buffer.from("other:12").toString("base64url"),
      Buffer.from("audit:1234567890123456").toString("base64url"),
      "",
    ];
    for (const cursor of garbageCursors.filter(Boolean)) {
      expectProblem(await admin.get(`${auditPath()}?cursor=${cursor}`), 400, "INVALID_CURSOR");
    }
    expectProblem(await admin.get(`${auditPath()}?cursor=${"a".repeat(65)}`), 400, "VALIDATION_FAILED");
    for (const limit of ["0", "500", "201", "-1", "1.5", "many"]) {
      const response = await admin.get(`${auditPath()}?limit=${limit}`);
      expectProblem(response, 400, "VALIDATION_FAILED");
      expect(response.json.errors.map((e: { path: string }) => e.path)).toContain("query.limit");
    }
    expect((await page(admin, "?limit=1")).items).toHaveLength(1);
    expect((await page(admin, "?limit=200")).items.length).toBeGreaterThan(10);
  });

  it("never shows another workspace's events", async () => {
    const { admin, owner, outsider } = w.people;
    const theirs = await workspaceRowsNewestFirst(w.otherWorkspaceId);
    expect(theirs.map((r) => r.action)).toEqual(
      expect.arrayContaining(["workspace.created", "invitation.created", "invitation.accepted"]),
    );
    const theirIds = new Set(theirs.map((r) => r.id));

    const ours = (await page(admin, "?limit=200")).items;
    expect(ours.every((e) => e.workspaceId === w.workspaceId)).toBe(true);
    expect(ours.filter((e) => theirIds.has(e.id))).toEqual([]);
    expect((await page(admin, `?limit=200&targetId=${w.otherWorkspaceId}`)).items).toEqual([]);
    expect((await page(admin, `?limit=200&actorId=${outsider.userId}`)).items).toEqual([]);

    // A cursor from their trail does not open it up through ours.
    const theirFirstPage = await page(outsider, "?limit=1", w.otherWorkspaceId);
    expect(theirFirstPage.items.map((e) => e.id)).toEqual([theirs[0]?.id]);
    const viaTheirCursor = await page(admin, `?limit=200&cursor=${theirFirstPage.nextCursor}`);
    expect(viaTheirCursor.items.length).toBeGreaterThan(0);
    expect(viaTheirCursor.items.every((e) => e.workspaceId === w.workspaceId)).toBe(true);

    const theirView = (await page(outsider, "?limit=200", w.otherWorkspaceId)).items;
    expect(theirView.map((e) => e.id)).toEqual(theirs.map((r) => r.id));

    // The deployment owner sees both, and can narrow to one.
    const deployment = expectStatus(await owner.get("/v1/deployment/audit-events?limit=200"), 200).json
      .items as AuditEventJson[];
    const workspaces = new Set(deployment.map((e) => e.workspaceId));
    expect(workspaces.has(w.workspaceId) && workspaces.has(w.otherWorkspaceId)).toBe(true);
    const narrowed = expectStatus(
      await owner.get(`/v1/deployment/audit-events?limit=200&workspaceId=${w.otherWorkspaceId}`),
      200,
    ).json.items as AuditEventJson[];
    expect(narrowed.map((e) => e.id)).toEqual(theirs.map((r) => r.id));
  });

  it("records the client ip and the request id of the request that caused each event", async () => {
    const { owner, admin } = w.people;
    const changed = expectStatus(
      await owner.patch(`${membersPath()}/${viewerMemberId}`, { role: "member" }),
      200,
    );
    const requestId = changed.headers.get("x-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const [latest] = (await page(admin, `?limit=1&action=member.role_changed`)).items;
    expect(latest).toMatchObject({
      action: "member.role_changed",
      ip: "127.0.0.1",
      requestId,
      actor: { type: "user", id: owner.userId },
      target: { type: "member", id: viewerMemberId },
      data: { from: "viewer", to: "member" },
    });

    // A caller's own plain request id is kept, and is what the event carries.
    const chosen = `audit-test-${Date.now()}`;
    const again = expectStatus(
      await owner.patch(
        `${membersPath()}/${viewerMemberId}`,
        { role: "viewer" },
        { headers: { "x-request-id": chosen } },
      ),
      200,
    );
    expect(again.headers.get("x-request-id")).toBe(chosen);
    const matching = (await page(admin, "?limit=200")).items.filter((e) => e.requestId === chosen);
    expect(matching.map((e) => e.action)).toEqual(["member.role_changed"]);
    expect(matching[0]?.data).toMatchObject({ from: "member", to: "viewer" });

    // Every event here came from an HTTP request, so every one has both.
    const everything = (await page(admin, "?limit=200")).items;
    for (const event of everything) {
      expect(event.ip, `${event.id} ${event.action}`).toBe("127.0.0.1");
      expect(event.requestId, `${event.id} ${event.action}`).toBeTruthy();
    }
    const rows = await workspaceRowsNewestFirst(w.workspaceId);
    expect(rows.map((r) => [r.id, r.ip, r.request_id])).toEqual(
      everything.map((e) => [e.id, e.ip, e.requestId]),
    );
  });
});
