import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi();
});
afterAll(() => t?.close());

const auditActions = async () =>
  (await t.database.db.selectFrom("audit_events").selectAll().orderBy("id").execute()).map((e) => ({
    action: e.action,
    actor: e.actor_label,
    ip: e.ip,
  }));

describe("accounts", () => {
  it("makes the first account the deployment owner, and only the first", async () => {
    const first = t.client();
    expectStatus(await first.signUp("first@example.com"), 200);
    const second = t.client();
    expectStatus(await second.signUp("second@example.com"), 200);

    expect(expectStatus(await first.get("/v1/me"), 200).json).toMatchObject({
      kind: "user",
      isDeploymentOwner: true,
    });
    expect(expectStatus(await second.get("/v1/me"), 200).json).toMatchObject({ isDeploymentOwner: false });
    const settings = await t.database.db
      .selectFrom("deployment_settings")
      .selectAll()
      .executeTakeFirstOrThrow();
    expect(settings.owner_user_id).toBe(first.userId);

    const events = await auditActions();
    expect(events).toContainEqual({ action: "auth.sign_up", actor: "first@example.com", ip: "127.0.0.1" });
    expect(events).toContainEqual({
      action: "deployment.owner_assigned",
      actor: "first@example.com",
      ip: "127.0.0.1",
    });
    expect(events).toContainEqual({ action: "auth.sign_up", actor: "second@example.com", ip: "127.0.0.1" });
    expect(events.filter((e) => e.action === "deployment.owner_assigned")).toHaveLength(1);
  });

  it("signs out with a bodiless POST, as documented, and with an empty JSON body", async () => {
    for (const body of [undefined, {}]) {
      const person = t.client();
      expectStatus(await person.signIn("first@example.com"), 200);
      expectStatus(await person.get("/v1/me"), 200);
      const out = expectStatus(await person.post("/api/auth/sign-out", body), 200);
      expect(out.headers.getSetCookie().join(";")).toMatch(/max-age=0/i);
      expect((await person.get("/v1/me")).status).toBe(401);
    }
  });

  it("audits sign-in and failed sign-in, with a problem JSON for the failure", async () => {
    const person = t.client();
    expectStatus(await person.signIn("first@example.com"), 200);
    const failed = await t.client().signIn("first@example.com", "wrong password!!");
    expect(failed.status).toBe(401);
    expect(failed.headers.get("content-type")).toContain("application/problem+json");
    expect(failed.json).toMatchObject({ status: 401, code: "INVALID_EMAIL_OR_PASSWORD" });

    const events = await auditActions();
    expect(events).toContainEqual({ action: "auth.sign_in", actor: "first@example.com", ip: "127.0.0.1" });
    expect(events).toContainEqual({
      action: "auth.sign_in_failed",
      actor: "first@example.com",
      ip: "127.0.0.1",
    });
  });

  it("lets only the deployment owner close sign-ups, and then refuses new accounts", async () => {
    const owner = t.client();
    expectStatus(await owner.signIn("first@example.com"), 200);
    const other = t.client();
    expectStatus(await other.signIn("second@example.com"), 200);

    expect((await other.patch("/v1/deployment/settings", { signupsOpen: false })).status).toBe(404);
    expect(
      expectStatus(await owner.patch("/v1/deployment/settings", { signupsOpen: false }), 200).json,
    ).toMatchObject({
      signupsOpen: false,
    });

    const refused = await t.client().signUp("late@example.com");
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ code: "SIGNUPS_CLOSED" });
    const users = await t.database.db.selectFrom("user").select("email").execute();
    expect(users.map((u) => u.email)).not.toContain("late@example.com");

    expectStatus(await owner.patch("/v1/deployment/settings", { signupsOpen: true }), 200);
    expectStatus(await t.client().signUp("late@example.com"), 200);
    const actions = (await auditActions()).map((e) => e.action);
    expect(actions).toContain("deployment.signups_closed");
    expect(actions).toContain("deployment.signups_opened");
    expect(actions).toContain("auth.sign_up_failed");
  });

  it("refuses cookie-authenticated changes from an untrusted origin", async () => {
    const owner = t.client();
    expectStatus(await owner.signIn("first@example.com"), 200);
    const response = await owner.post(
      "/v1/workspaces",
      { name: "CSRF" },
      { headers: { origin: "https://evil.example" } },
    );
    expect(response.status).toBe(403);
    expect(response.json).toMatchObject({ code: "UNTRUSTED_ORIGIN" });
  });
});
