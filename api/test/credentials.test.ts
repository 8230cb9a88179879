import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectStatus, type RawResponse, startTestApi, type TestApi } from "../testing/harness.ts";
import { buildWorld, type World } from "../testing/world.ts";

let t: TestApi;
let w: World;
beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "cred");
});
afterAll(() => t?.close());

/** Every secret sent to the API and every ciphertext seen in the database during this file. */
const secrets: string[] = [];
const ciphertexts: string[] = [];

function newSecret(label: string): string {
  const secret = `sk-${label}-${randomBytes(24).toString("hex")}`;
  secrets.push(secret);
  return secret;
}

const credentialsPath = (workspaceId = w.workspaceId) =>
  `/v1/workspaces/${workspaceId}/connector-credentials`;

async function storedRow(credentialId: string) {
  const row = await t.database.db
    .selectFrom("connector_credentials")
    .selectAll()
    .where("id", "=", credentialId)
    .executeTakeFirstOrThrow();
  ciphertexts.push(row.ciphertext);
  return row;
}

const decrypt = (ciphertext: string, workspaceId: string, credentialId: string) =>
  t.api.deps.cipher.decrypt(ciphertext, `${workspaceId}/${credentialId}`);

const auditFor = (credentialId: string) =>
  t.database.db
    .selectFrom("audit_events")
    .selectAll()
    .where("target_type", "=", "connector_credential")
    .where("target_id", "=", credentialId)
    .orderBy("id")
    .execute();

function expectProblem(response: RawResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
}

describe("connector credentials", () => {
  it("stores a credential encrypted, bound to its row, and answers without the secret", async () => {
    const { admin } = w.people;
    const secret = newSecret("github");
    const created = expectStatus(
      await admin.post(credentialsPath(), { name: "GitHub bot", kind: "github", secret }),
      201,
    );
    expect(created.json).toEqual({
      id: expect.any(String),
      name: "GitHub bot",
      kind: "github",
      createdBy: admin.userId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(created.text).not.toContain(secret);

    const row = await storedRow(created.json.id);
    expect(row.workspace_id).toBe(w.workspaceId);
    expect(row.ciphertext).toMatch(/^[0-9a-f]{12}\./);
    expect(row.ciphertext.startsWith(`${t.api.deps.cipher.keyId}.`)).toBe(true);
    expect(row.ciphertext).not.toContain(secret);
    expect(row.ciphertext).not.toContain(Buffer.from(secret).toString("base64url"));
    expect(decrypt(row.ciphertext, w.workspaceId, created.json.id)).toBe(secret);
    expect(() => decrypt(row.ciphertext, w.otherWorkspaceId, created.json.id)).toThrow();
    expect(() => decrypt(row.ciphertext, w.workspaceId, "another-credential")).toThrow();

    const listed = expectStatus(await w.people.member.get(credentialsPath()), 200);
    expect(listed.json.items).toEqual([created.json]);
  });

  it("lets only admins and owners store or change credentials, and only people", async () => {
    const { member, viewer, owner } = w.people;
    for (const person of [member, viewer]) {
      const denied = await person.post(credentialsPath(), {
        name: "not mine",
        kind: "slack",
        secret: newSecret("denied"),
      });
      expectProblem(denied, 403, "ROLE_FORBIDDEN");
    }
    expectProblem(await viewer.get(credentialsPath()), 403, "ROLE_FORBIDDEN");
    expectProblem(await w.people.outsider.get(credentialsPath()), 404, "WORKSPACE_NOT_FOUND");

    const key = expectStatus(
      await owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "k", role: "admin" }),
      201,
    ).json.key as string;
    const byKey = await t
      .client()
      .post(credentialsPath(), { name: "via key", kind: "slack", secret: newSecret("key") }, { apiKey: key });
    expectProblem(byKey, 403, "PERSON_REQUIRED");
    // Reading names and kinds is fine for a key.
    const listed = expectStatus(await t.client().get(credentialsPath(), { apiKey: key }), 200);
    expect(listed.json.items.map((c: { name: string }) => c.name)).toEqual(["GitHub bot"]);

    const names = await t.database.db.selectFrom("connector_credentials").select("name").execute();
    expect(names.map((n) => n.name)).not.toContain("not mine");
    expect(names.map((n) => n.name)).not.toContain("via key");
  });

  it("refuses a duplicate name in the same workspace, not in another", async () => {
    const { owner, outsider } = w.people;
    const firstSecret = newSecret("slack");
    const first = expectStatus(
      await owner.post(credentialsPath(), { name: "Slack", kind: "slack", secret: firstSecret }),
      201,
    ).json;
    await storedRow(first.id);
    const duplicate = await owner.post(credentialsPath(), {
      name: "Slack",
      kind: "slack",
      secret: newSecret("slack-dup"),
    });
    expectProblem(duplicate, 409, "CREDENTIAL_NAME_TAKEN");
    // Names are trimmed before the comparison.
    const padded = await owner.post(credentialsPath(), {
      name: "  Slack ",
      kind: "slack",
      secret: newSecret("slack-pad"),
    });
    expectProblem(padded, 409, "CREDENTIAL_NAME_TAKEN");
    const rows = await t.database.db
      .selectFrom("connector_credentials")
      .select("id")
      .where("workspace_id", "=", w.workspaceId)
      .where("name", "=", "Slack")
      .execute();
    expect(rows).toEqual([{ id: first.id }]);
    // The surviving row still holds the first secret.
    expect(decrypt((await storedRow(first.id)).ciphertext, w.workspaceId, first.id)).toBe(firstSecret);

    const elsewhere = expectStatus(
      await outsider.post(credentialsPath(w.otherWorkspaceId), {
        name: "Slack",
        kind: "slack",
        secret: newSecret("outsider"),
      }),
      201,
    ).json;
    await storedRow(elsewhere.id);
  });

  it("answers 409, not an error, when the same name is stored twice at once", async () => {
    const { owner } = w.people;
    const attempts = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        owner.post(credentialsPath(), { name: "Raced", kind: "slack", secret: newSecret(`race-${n}`) }),
      ),
    );
    expect(attempts.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    for (const refused of attempts.filter((r) => r.status === 409)) {
      expectProblem(refused, 409, "CREDENTIAL_NAME_TAKEN");
    }
    const winner = attempts.find((r) => r.status === 201)?.json;
    const row = await storedRow(winner.id);
    expect(secrets).toContain(decrypt(row.ciphertext, w.workspaceId, winner.id));
    expectStatus(await owner.delete(`${credentialsPath()}/${winner.id}`), 204);
  });

  it("rejects invalid input without echoing the secret", async () => {
    const { admin } = w.people;
    const cases = [
      { name: "Bad kind", kind: "Not A Kind", secret: newSecret("badkind") },
      { name: "", kind: "slack", secret: newSecret("noname") },
      { name: "Too long", kind: "slack", secret: `${newSecret("long")}${"x".repeat(16_384)}` },
      { name: "Empty", kind: "slack", secret: "" },
    ];
    for (const body of cases) {
      const response = await admin.post(credentialsPath(), body);
      expectProblem(response, 400, "VALIDATION_FAILED");
      expect(response.json.errors.length).toBeGreaterThan(0);
    }
    const malformed = await admin.post(
      credentialsPath(),
      `{"name":"x","kind":"slack","secret":"${newSecret("json")}"`,
    );
    expect(malformed.status).toBe(400);
    const count = await t.database.db.selectFrom("connector_credentials").select("id").execute();
    expect(count).toHaveLength(3);
  });

  it("replaces a secret with a fresh ciphertext", async () => {
    const { admin, member } = w.people;
    const created = expectStatus(
      await admin.post(credentialsPath(), { name: "Linear", kind: "linear", secret: newSecret("linear-1") }),
      201,
    ).json;
    const before = await storedRow(created.id);

    const deniedSecret = newSecret("linear-denied");
    expectProblem(
      await member.put(`${credentialsPath()}/${created.id}/secret`, { secret: deniedSecret }),
      403,
      "ROLE_FORBIDDEN",
    );

    const replacement = newSecret("linear-2");
    const replaced = expectStatus(
      await admin.put(`${credentialsPath()}/${created.id}/secret`, { secret: replacement }),
      200,
    );
    expect(replaced.json).toMatchObject({ id: created.id, name: "Linear", kind: "linear" });
    expect(new Date(replaced.json.updatedAt).getTime()).toBeGreaterThanOrEqual(
      new Date(created.updatedAt).getTime(),
    );
    expect(replaced.text).not.toContain(replacement);

    const after = await storedRow(created.id);
    expect(after.ciphertext).not.toBe(before.ciphertext);
    expect(after.ciphertext).not.toContain(replacement);
    expect(after.ciphertext.startsWith(`${t.api.deps.cipher.keyId}.`)).toBe(true);
    expect(decrypt(after.ciphertext, w.workspaceId, created.id)).toBe(replacement);
    expect(decrypt(after.ciphertext, w.workspaceId, created.id)).not.toBe(deniedSecret);

    expectProblem(
      await admin.put(`${credentialsPath()}/no-such-credential/secret`, { secret: newSecret("ghost") }),
      404,
      "CONNECTOR_CREDENTIAL_NOT_FOUND",
    );
  });

  it("never reaches another workspace's credential", async () => {
    const { owner, outsider } = w.people;
    const theirs = (
      expectStatus(await outsider.get(credentialsPath(w.otherWorkspaceId)), 200).json.items as Array<{
        id: string;
      }>
    )[0];
    if (!theirs) throw new Error("the outsider's workspace should have a credential");
    const original = await storedRow(theirs.id);

    expectProblem(
      await owner.put(`${credentialsPath()}/${theirs.id}/secret`, { secret: newSecret("hijack") }),
      404,
      "CONNECTOR_CREDENTIAL_NOT_FOUND",
    );
    expectProblem(
      await owner.delete(`${credentialsPath()}/${theirs.id}`),
      404,
      "CONNECTOR_CREDENTIAL_NOT_FOUND",
    );
    expectProblem(
      await owner.put(`${credentialsPath(w.otherWorkspaceId)}/${theirs.id}/secret`, {
        secret: newSecret("hijack-2"),
      }),
      404,
      "WORKSPACE_NOT_FOUND",
    );
    const ours = expectStatus(await owner.get(credentialsPath()), 200).json.items as Array<{ id: string }>;
    expect(ours.map((c) => c.id)).not.toContain(theirs.id);

    const untouched = await storedRow(theirs.id);
    expect(untouched.ciphertext).toBe(original.ciphertext);
    expect(untouched.workspace_id).toBe(w.otherWorkspaceId);
  });

  it("deletes a credential", async () => {
    const { admin, member } = w.people;
    const created = expectStatus(
      await admin.post(credentialsPath(), { name: "Doomed", kind: "s3", secret: newSecret("doomed") }),
      201,
    ).json;
    await storedRow(created.id);
    expectProblem(await member.delete(`${credentialsPath()}/${created.id}`), 403, "ROLE_FORBIDDEN");

    const deleted = await admin.delete(`${credentialsPath()}/${created.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    const remaining = await t.database.db
      .selectFrom("connector_credentials")
      .select("id")
      .where("id", "=", created.id)
      .execute();
    expect(remaining).toEqual([]);
    const listed = expectStatus(await admin.get(credentialsPath()), 200).json.items as Array<{ id: string }>;
    expect(listed.map((c) => c.id)).not.toContain(created.id);
    expectProblem(
      await admin.delete(`${credentialsPath()}/${created.id}`),
      404,
      "CONNECTOR_CREDENTIAL_NOT_FOUND",
    );
  });

  it("audits creation, replacement and deletion without the secret", async () => {
    const { admin } = w.people;
    const created = expectStatus(
      await admin.post(credentialsPath(), {
        name: "Audited",
        kind: "openai",
        secret: newSecret("audited-1"),
      }),
      201,
    ).json;
    await storedRow(created.id);
    expectStatus(
      await admin.put(`${credentialsPath()}/${created.id}/secret`, { secret: newSecret("audited-2") }),
      200,
    );
    await storedRow(created.id);
    expectStatus(await admin.delete(`${credentialsPath()}/${created.id}`), 204);

    const events = await auditFor(created.id);
    expect(
      events.map((e) => ({
        action: e.action,
        workspace: e.workspace_id,
        actorType: e.actor_type,
        actorId: e.actor_id,
        data: e.data,
      })),
    ).toEqual(
      [
        "connector_credential.created",
        "connector_credential.secret_replaced",
        "connector_credential.deleted",
      ].map((action) => ({
        action,
        workspace: w.workspaceId,
        actorType: "user",
        actorId: admin.userId,
        data: { name: "Audited", kind: "openai" },
      })),
    );

    const everything = await t.database.db.selectFrom("audit_events").selectAll().execute();
    expect(everything.length).toBeGreaterThan(10);
    const serialized = JSON.stringify(everything);
    for (const secret of secrets) expect(serialized).not.toContain(secret);
    for (const ciphertext of ciphertexts) expect(serialized).not.toContain(ciphertext);
  });

  it("never sends a secret or a ciphertext in any response", async () => {
    const { owner, admin, member, viewer, outsider } = w.people;
    // Everything that lists, describes or reports on the workspace, by everyone, once more.
    for (const person of [owner, admin, member, viewer, outsider]) {
      await person.get(credentialsPath());
      await person.get(`/v1/workspaces/${w.workspaceId}/members`);
      await person.get(`/v1/workspaces/${w.workspaceId}/audit-events?limit=200`);
      await person.get("/v1/me");
      await person.get("/v1/workspaces");
    }
    await outsider.get(credentialsPath(w.otherWorkspaceId));
    await outsider.get(`/v1/workspaces/${w.otherWorkspaceId}/audit-events?limit=200`);

    // Walk the whole workspace trail and the deployment's, page by page.
    for (const path of [`/v1/workspaces/${w.workspaceId}/audit-events`, "/v1/deployment/audit-events"]) {
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor ? `?limit=5&cursor=${cursor}` : "?limit=5";
        const page = expectStatus(await owner.get(`${path}${query}`), 200).json;
        cursor = page.nextCursor;
        pages += 1;
      } while (cursor && pages < 100);
      expect(pages).toBeGreaterThan(1);
    }
    const trail = expectStatus(await owner.get("/v1/deployment/audit-events?limit=200"), 200).json
      .items as Array<{
      action: string;
    }>;
    expect(trail.map((e) => e.action)).toEqual(
      expect.arrayContaining([
        "connector_credential.created",
        "connector_credential.secret_replaced",
        "connector_credential.deleted",
      ]),
    );
    expect((await owner.get("/openapi.json")).status).toBe(200);

    // Errors around a real credential, some of them carrying a secret in the request.
    const live = (
      expectStatus(await owner.get(credentialsPath()), 200).json.items as Array<{ id: string }>
    )[0];
    if (!live) throw new Error("expected a live credential");
    expectProblem(
      await owner.post(credentialsPath(), { name: "GitHub bot", kind: "github", secret: newSecret("dup") }),
      409,
      "CREDENTIAL_NAME_TAKEN",
    );
    expectProblem(
      await owner.put(`${credentialsPath()}/${live.id}/secret`, { secret: 42 }),
      400,
      "VALIDATION_FAILED",
    );
    expectProblem(
      await viewer.put(`${credentialsPath()}/${live.id}/secret`, { secret: newSecret("viewer") }),
      403,
      "ROLE_FORBIDDEN",
    );
    expectProblem(
      await t.client().put(`${credentialsPath()}/${live.id}/secret`, { secret: newSecret("anonymous") }),
      401,
      "UNAUTHENTICATED",
    );
    expectProblem(await owner.get(`${credentialsPath()}/${live.id}`), 404, "NOT_FOUND");
    expectProblem(await owner.get(`${credentialsPath()}/${live.id}/secret`), 404, "NOT_FOUND");

    // Whatever is stored now counts too.
    const stored = await t.database.db.selectFrom("connector_credentials").select("ciphertext").execute();
    ciphertexts.push(...stored.map((row) => row.ciphertext));

    expect(secrets.length).toBeGreaterThan(20);
    expect(new Set(ciphertexts).size).toBeGreaterThanOrEqual(8);
    expect(t.responses.length).toBeGreaterThan(80);
    const sealedShape = new RegExp(`${t.api.deps.cipher.keyId}\\.[A-Za-z0-9_-]{16}\\.`);
    // The shape check would catch a ciphertext this file never saw.
    for (const ciphertext of ciphertexts) expect(sealedShape.test(ciphertext)).toBe(true);
    const leaks: string[] = [];
    for (const [index, text] of t.responses.entries()) {
      for (const secret of secrets) {
        if (text.includes(secret) || text.includes(secret.slice(-48)))
          leaks.push(`response ${index}: a secret`);
      }
      for (const ciphertext of new Set(ciphertexts)) {
        if (text.includes(ciphertext) || text.includes(ciphertext.split(".")[2] ?? ciphertext)) {
          leaks.push(`response ${index}: a ciphertext`);
        }
      }
      if (sealedShape.test(text)) leaks.push(`response ${index}: something shaped like a ciphertext`);
    }
    expect(leaks).toEqual([]);
  });
});
