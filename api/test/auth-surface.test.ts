import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * Better Auth is mounted for accounts only. Its organization and API-key endpoints would change
 * workspaces, members, roles and keys around Cubicle's routes (their role rules, their audit, their
 * problem codes); they must not answer at all.
 */
let t: TestApi;
let w: World;
beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "surface");
});
afterAll(() => t?.close());

describe("Better Auth's endpoints", () => {
  it("answer 404 beyond sign-up, sign-in, sign-out and the session, and change nothing", async () => {
    const { owner, admin, member } = w.people;
    const memberRow = await t.database.db
      .selectFrom("member")
      .innerJoin("user", "user.id", "member.userId")
      .select(["member.id", "member.role"])
      .where("member.organizationId", "=", w.workspaceId)
      .where("member.role", "=", "member")
      .executeTakeFirstOrThrow();
    const attempts: Array<[string, Record<string, unknown>]> = [
      ["/api/auth/organization/delete", { organizationId: w.workspaceId }],
      [
        "/api/auth/organization/update-member-role",
        { memberId: memberRow.id, role: "owner", organizationId: w.workspaceId },
      ],
      [
        "/api/auth/organization/remove-member",
        { memberIdOrEmail: memberRow.id, organizationId: w.workspaceId },
      ],
      ["/api/auth/organization/create", { name: "Around", slug: `around-${Date.now()}` }],
      [
        "/api/auth/organization/invite-member",
        { email: "x@example.com", role: "owner", organizationId: w.workspaceId },
      ],
      ["/api/auth/api-key/create", { name: "unaudited", organizationId: w.workspaceId }],
      ["/api/auth/update-user", { name: "Renamed" }],
    ];
    const before = await t.database.db
      .selectFrom("audit_events")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirstOrThrow();
    for (const [path, body] of attempts) {
      for (const client of [owner, admin, member]) {
        const response = await client.post(path, body);
        expect([path, response.status, response.json?.code]).toEqual([path, 404, "NOT_FOUND"]);
      }
    }
    expect((await owner.get(`/v1/workspaces/${w.workspaceId}`)).status).toBe(200);
    const after = await t.database.db
      .selectFrom("member")
      .select("role")
      .where("id", "=", memberRow.id)
      .executeTakeFirstOrThrow();
    expect(after.role).toBe(memberRow.role);
    expect(
      await t.database.db.selectFrom("apikey").selectAll().where("name", "=", "unaudited").execute(),
    ).toEqual([]);
    const workspaces = await t.database.db.selectFrom("organization").select("name").execute();
    expect(workspaces.map((o) => o.name)).not.toContain("Around");
    expect(
      await t.database.db
        .selectFrom("audit_events")
        .select((eb) => eb.fn.countAll().as("n"))
        .executeTakeFirstOrThrow(),
    ).toEqual(before);
  });

  it("still sign up, sign in, read the session and sign out", async () => {
    const person = t.client();
    expectStatus(await person.signUp("surface-person@example.com"), 200);
    expect(expectStatus(await person.get("/api/auth/get-session"), 200).json).toMatchObject({
      user: { email: "surface-person@example.com" },
    });
    expectStatus(await person.post("/api/auth/sign-out"), 200);
    expectStatus(await person.signIn("surface-person@example.com"), 200);
  });
});
