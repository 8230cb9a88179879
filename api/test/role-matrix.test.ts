import { EGRESS_LEVELS } from "@cubicle/providers/contract";
import { RECORDING_FILE_MAGIC } from "@cubicle/proxy/recording";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPendingRecording } from "../src/recordings/index.ts";
import { createComputer } from "../testing/computers.ts";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { documentedRoutes, type Method, openApiDocument } from "../testing/openapi.ts";
import { recordingOf, upload } from "../testing/recording-uploads.ts";
import { freeWorkspaceSessions } from "../testing/sessions.ts";
import { until } from "../testing/until.ts";
import { buildWorld, join, type Role, type World } from "../testing/world.ts";

/**
 * Who may call what: one row per /v1 route, one expected outcome per caller. A number is the
 * success status; a [status, code] pair is a refusal, answered as problem JSON with that code.
 */
type Caller = "owner" | "admin" | "member" | "viewer" | "outsider" | "anonymous" | "key";
type Refusal = readonly [status: number, code: string];
type Outcome = number | Refusal;

const CALLERS: readonly Caller[] = ["owner", "admin", "member", "viewer", "outsider", "anonymous", "key"];

const UNAUTHENTICATED: Refusal = [401, "UNAUTHENTICATED"];
const HIDDEN: Refusal = [404, "WORKSPACE_NOT_FOUND"];
const ROLE: Refusal = [403, "ROLE_FORBIDDEN"];
const PERSON: Refusal = [403, "PERSON_REQUIRED"];
const NOT_FOUND: Refusal = [404, "NOT_FOUND"];

/** One call to make, built fresh for each (route, caller) so allowed calls never starve later ones. */
interface Prepared {
  /** Defaults to the row's path with {workspaceId} filled in. */
  path?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** After a success: the change happened. */
  allowed?: (response: RawResponse) => Promise<void> | void;
  /** After a refusal: nothing changed. */
  refused?: () => Promise<void> | void;
}

interface Row {
  method: Method;
  /** As the OpenAPI document spells it. */
  path: string;
  expect: Record<Caller, Outcome>;
  prepare?: (caller: Caller) => Promise<Prepared>;
}

let t: TestApi;
let w: World;
/** A workspace API key with role member, created by the owner. */
let memberKey: string;
/** Someone outside the workspace who hosts workspaces whose invitations the callers receive. */
let host: TestClient;
/** The workspace's Team Computer, running on the fake provider. */
let computerId: string;
let seq = 0;
const unique = (prefix: string) => `${prefix}-${++seq}-${Date.now().toString(36)}`;

beforeAll(async () => {
  t = await startTestApi();
  // buildWorld signs the owner up first, so the owner is also the deployment owner.
  w = await buildWorld(t, "matrix");
  memberKey = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "matrix", role: "member" }),
    201,
  ).json.key;
  host = t.client();
  expectStatus(await host.signUp("host-matrix@example.com"), 200);
  computerId = (await createComputer(t, w.workspaceId)).id;
});
afterAll(() => t?.close());

const ws = (path: string) => path.replace("{workspaceId}", () => w.workspaceId);
const emailOf = (caller: Caller) =>
  caller === "anonymous" || caller === "key" ? null : w.people[caller].email;
const roleOf = (caller: Caller) =>
  caller === "key" ? "member" : caller === "anonymous" || caller === "outsider" ? null : caller;

function send(
  caller: Caller,
  method: Method,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<RawResponse> {
  if (caller === "anonymous") return t.client().request(method, path, { body, headers });
  if (caller === "key") return t.client().request(method, path, { body, headers, apiKey: memberKey });
  return w.people[caller].request(method, path, { body, headers });
}

const db = () => t.database.db;

/** A new member of the world's workspace, joined by invitation. */
async function freshMember(role: "viewer" | "member") {
  const person = await join(t, w.people.owner, w.workspaceId, `${unique("target")}@example.com`, role);
  const row = await db()
    .selectFrom("member")
    .select("id")
    .where("organizationId", "=", w.workspaceId)
    .where("userId", "=", person.userId)
    .executeTakeFirstOrThrow();
  return row.id;
}
const memberRole = async (memberId: string) =>
  (await db().selectFrom("member").select("role").where("id", "=", memberId).executeTakeFirst())?.role;

async function freshInvitation() {
  return expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/invitations`, {
      email: `${unique("invitee")}@example.com`,
      role: "viewer",
    }),
    201,
  ).json.id as string;
}
const invitationStatus = async (id: string) =>
  (await db().selectFrom("invitation").select("status").where("id", "=", id).executeTakeFirstOrThrow())
    .status;

/** An invitation to a brand-new workspace of the host, addressed to `email`. */
async function invitationFromHost(email: string) {
  const workspace = expectStatus(await host.post("/v1/workspaces", { name: unique("Host") }), 201).json;
  const invitation = expectStatus(
    await host.post(`/v1/workspaces/${workspace.id}/invitations`, { email, role: "viewer" }),
    201,
  ).json;
  return { workspaceId: workspace.id as string, invitationId: invitation.id as string };
}

async function freshCredential() {
  return expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/connector-credentials`, {
      name: unique("cred"),
      kind: "github",
      secret: "first secret",
    }),
    201,
  ).json.id as string;
}
const credential = (id: string) =>
  db()
    .selectFrom("connector_credentials")
    .select(["id", "ciphertext"])
    .where("id", "=", id)
    .executeTakeFirst();

async function ownersKey() {
  return expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
      name: unique("key"),
      role: "viewer",
    }),
    201,
  ).json.id as string;
}
const keyEnabled = async (id: string) =>
  (await db().selectFrom("apikey").select("enabled").where("id", "=", id).executeTakeFirstOrThrow()).enabled;

const screen = (index: number, rest = "") =>
  ws(`/v1/workspaces/{workspaceId}/computers/${computerId}/screens/${index}${rest}`);
const liveLease = (index: number) =>
  db()
    .selectFrom("control_leases")
    .selectAll()
    .where("computer_id", "=", computerId)
    .where("screen_index", "=", index)
    .where("released_at", "is", null)
    .executeTakeFirst();
const leaseRow = (id: string) =>
  db().selectFrom("control_leases").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
/** Ends whatever lease the screen has, behind the API's back, so the next take starts clean. */
const freeScreen = (index: number) =>
  db()
    .updateTable("control_leases")
    .set({ released_at: new Date(), release_reason: "released" })
    .where("computer_id", "=", computerId)
    .where("screen_index", "=", index)
    .where("released_at", "is", null)
    .execute();
/** A fresh lease of the screen: the caller's own when they may hold one, else the owner's. */
async function heldBy(caller: Caller, index: number) {
  await freeScreen(index);
  const holder =
    caller === "owner" || caller === "admin" || caller === "member" || caller === "key" ? caller : "owner";
  return expectStatus(await send(holder, "POST", screen(index, "/control")), 201).json as {
    leaseId: string;
    expiresAt: string;
  };
}

const auditedFor = async (leaseId: string, action: string) =>
  (
    await db()
      .selectFrom("audit_events")
      .select("data")
      .where("action", "=", action)
      .where("target_id", "=", computerId)
      .execute()
  ).filter((row) => row.data.leaseId === leaseId).length;

/** A path on the world's Team Computer, for its people's tools. */
const onComputer = (rest: string) => ws(`/v1/workspaces/{workspaceId}/computers/${computerId}${rest}`);
const fileOnComputer = (path: string) => onComputer(`/files/content?path=${path}`);
/** Puts a file in the Team Computer's home as the owner. */
async function placeFile(path: string, content: string) {
  expectStatus(
    await w.people.owner.put(fileOnComputer(path), content, {
      headers: { "content-type": "application/octet-stream" },
    }),
    204,
  );
}
/** How many `action` events on the Team Computer carry `value` in their data's `field`. */
const computerAudits = async (action: string, field: string, value: string) =>
  (
    await db()
      .selectFrom("audit_events")
      .select("data")
      .where("action", "=", action)
      .where("target_id", "=", computerId)
      .execute()
  ).filter((row) => row.data[field] === value).length;

/** A bot of the world's workspace, made by the owner; Private ones get their own computer. */
async function freshBot(mode: "team" | "private" = "team") {
  return expectStatus(
    await w.people.owner.post(ws("/v1/workspaces/{workspaceId}/bots"), {
      name: unique("bot"),
      charter: { purpose: "matrix", boundary: "matrix", privacyReason: mode === "private" ? "matrix" : "" },
      computerMode: mode,
    }),
    201,
  ).json as { id: string; computerId: string };
}
const botRow = (id: string) =>
  db().selectFrom("bots").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
const computerRow = (id: string) =>
  db().selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
/** A Private bot's computer of its own (so stopping it disturbs no other row), started if asked. */
async function freshComputer(running: boolean) {
  const { computerId } = await freshBot("private");
  if (running)
    expectStatus(
      await w.people.owner.post(ws(`/v1/workspaces/{workspaceId}/computers/${computerId}/start`)),
      200,
    );
  return computerId;
}

/** A running Private computer with one checkpoint, taken by the owner. */
async function checkpointedComputer() {
  const id = await freshComputer(true);
  const checkpoint = expectStatus(
    await w.people.owner.post(ws(`/v1/workspaces/{workspaceId}/computers/${id}/checkpoints`)),
    201,
  ).json as { id: string };
  const base = ws(`/v1/workspaces/{workspaceId}/computers/${id}/checkpoints/${checkpoint.id}`);
  return { id, checkpointId: checkpoint.id, base };
}
const checkpointCount = async (id: string) =>
  (await db().selectFrom("checkpoints").select("id").where("computer_id", "=", id).execute()).length;

const settingsUpdatedAt = async () =>
  (await db().selectFrom("deployment_settings").select("updated_at").executeTakeFirstOrThrow()).updated_at;

const deploymentOwnerOnly: Record<Caller, Outcome> = {
  owner: 200,
  admin: NOT_FOUND,
  member: NOT_FOUND,
  viewer: NOT_FOUND,
  outsider: NOT_FOUND,
  anonymous: UNAUTHENTICATED,
  key: NOT_FOUND,
};

/** Ends every open session of the workspace behind the API's back, so screens never run out. */
const endSessions = () => freeWorkspaceSessions(db(), w.workspaceId);
const sessionsOf = (botId: string) => ws(`/v1/workspaces/{workspaceId}/bots/${botId}/sessions`);
/**
 * A session of a fresh Team bot, opened through the API by the caller when it may hold one (only
 * its holder may use a session), else by the owner; with the path and fence header to use it.
 */
async function freshSession(caller: Caller) {
  await endSessions();
  const bot = await freshBot();
  const holder: "owner" | "admin" | "member" | "key" =
    caller === "admin" || caller === "member" || caller === "key" ? caller : "owner";
  const sessions = sessionsOf(bot.id);
  const opened =
    holder === "key"
      ? await t.client().post(sessions, undefined, { apiKey: memberKey })
      : await w.people[holder].post(sessions);
  const s = expectStatus(opened, 201).json as { sessionId: string; fence: number };
  const headers = { "x-session-fence": String(s.fence) };
  return { ...s, holder, path: (rest = "") => `${sessions}/${s.sessionId}${rest}`, headers };
}
/** Writes a file through the session as its holder. */
async function writeThrough(
  session: Awaited<ReturnType<typeof freshSession>>,
  path: string,
  content: string,
) {
  expectStatus(
    await send(session.holder, "PUT", session.path(`/files/content?path=${path}`), content, {
      ...session.headers,
      "content-type": "application/octet-stream",
    }),
    204,
  );
}
const sessionRow = (id: string) =>
  db().selectFrom("execution_leases").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
/** How many audit events of `action` name `id` (a session, a computer) as their target. */
const auditsOf = async (id: string, action: string) =>
  (
    await db()
      .selectFrom("audit_events")
      .select("id")
      .where("target_id", "=", id)
      .where("action", "=", action)
      .execute()
  ).length;
/** Who may use sessions and tools: members and above, people or API keys. */
const membersAndKeys = (ok: Outcome): Record<Caller, Outcome> => ({
  owner: ok,
  admin: ok,
  member: ok,
  viewer: ROLE,
  outsider: HIDDEN,
  anonymous: UNAUTHENTICATED,
  key: ok,
});
const everyMember = (ok: Outcome): Record<Caller, Outcome> => ({ ...membersAndKeys(ok), viewer: ok });
const adminsOnly = (ok: Outcome): Record<Caller, Outcome> => ({
  ...membersAndKeys(ok),
  member: ROLE,
  key: ROLE,
});
/** The fake computer has no apps: reaching it (and its refusal) proves the caller was let through. */
const LAUNCH_FAILED: Refusal = [502, "APP_LAUNCH_FAILED"];
/** A tool row: a fresh session of the caller's, the tool called with its fence, audited when allowed. */
function toolRow(
  method: Method,
  rest: string,
  ok: Outcome,
  options: {
    body?: unknown;
    headers?: Record<string, string>;
    query?: string;
    audit?: string;
    before?: (session: Awaited<ReturnType<typeof freshSession>>) => Promise<void>;
    allowed?: (response: RawResponse) => void;
  } = {},
): Row {
  return {
    method,
    path: `/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}${rest}`,
    expect: membersAndKeys(ok),
    prepare: async (caller) => {
      const session = await freshSession(caller);
      await options.before?.(session);
      const audited = () => (options.audit ? auditsOf(session.sessionId, options.audit) : 0);
      return {
        path: session.path(`${rest}${options.query ?? ""}`),
        body: options.body,
        headers: { ...session.headers, ...options.headers },
        allowed: async (r) => {
          options.allowed?.(r);
          if (options.audit) expect(await audited()).toBe(1);
        },
        refused: async () => expect(await audited()).toBe(0),
      };
    },
  };
}

/** A complete recording of the computer's screen, uploaded as the proxy would upload it. */
async function recording(): Promise<string> {
  const id = await createPendingRecording(db(), {
    workspaceId: w.workspaceId,
    computerId,
    screen: 0,
    kind: "control",
    controlLeaseId: unique("lease"),
    actor: { type: "user", id: w.people.admin.userId, name: w.people.admin.email },
  });
  const response = await upload(t.api.url, t.api.deps.capabilities, id, recordingOf([]).bytes);
  expect(response.status).toBe(204);
  return id;
}

/** A video export of a fresh recording, made by an admin; `ready` waits until it can be downloaded. */
async function recordingExport(ready: boolean): Promise<{ recordingId: string; exportId: string }> {
  const recordingId = await recording();
  const path = ws(`/v1/workspaces/{workspaceId}/recordings/${recordingId}/exports`);
  const made = expectStatus(await w.people.admin.post(path, { format: "webm" }), 202).json;
  if (ready)
    await until("the export to be ready", async () => {
      const status = expectStatus(await w.people.admin.get(`${path}/${made.id}`), 200).json.status;
      if (status === "failed") throw new Error("the export failed");
      return status === "ready" ? true : undefined;
    });
  return { recordingId, exportId: made.id };
}

const recordingRecord = (id: string) =>
  db().selectFrom("recordings").select("id").where("id", "=", id).executeTakeFirst();

/** Recordings: admins and owners only (their API keys too); changing what is kept needs a person. */
const ADMINS_ONLY: Record<Caller, Outcome> = {
  owner: 200,
  admin: 200,
  member: ROLE,
  viewer: ROLE,
  outsider: HIDDEN,
  anonymous: UNAUTHENTICATED,
  key: ROLE,
};

const MATRIX: Row[] = [
  // Accounts
  {
    method: "GET",
    path: "/v1/me",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: 200,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async (caller) => ({
      allowed: (r) => {
        if (caller === "key") expect(r.json).toMatchObject({ kind: "api_key", workspaceId: w.workspaceId });
        else expect(r.json).toMatchObject({ kind: "user", email: emailOf(caller) });
      },
    }),
  },

  // Workspaces
  {
    method: "GET",
    path: "/v1/workspaces",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: 200,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async (caller) => ({
      allowed: (r) => {
        const ids = r.json.items.map((item: { id: string }) => item.id);
        if (caller === "outsider") expect(ids).not.toContain(w.workspaceId);
        else
          expect(r.json.items).toContainEqual(
            expect.objectContaining({ id: w.workspaceId, role: roleOf(caller) }),
          );
        if (caller === "key") expect(ids).toEqual([w.workspaceId]);
      },
    }),
  },
  {
    method: "POST",
    path: "/v1/workspaces",
    expect: {
      owner: 201,
      admin: 201,
      member: 201,
      viewer: 201,
      outsider: 201,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const name = unique("Made");
      const named = () => db().selectFrom("organization").select("id").where("name", "=", name).execute();
      return {
        body: { name },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ name, role: "owner" });
          expect(await named()).toHaveLength(1);
        },
        refused: async () => expect(await named()).toHaveLength(0),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async (caller) => ({
      allowed: (r) => expect(r.json).toMatchObject({ id: w.workspaceId, role: roleOf(caller) }),
    }),
  },

  // Members
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/members",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      allowed: (r) =>
        expect(r.json.items).toContainEqual(
          expect.objectContaining({ userId: w.people.owner.userId, role: "owner" }),
        ),
    }),
  },
  {
    method: "PATCH",
    path: "/v1/workspaces/{workspaceId}/members/{memberId}",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const memberId = await freshMember("viewer");
      return {
        path: ws(`/v1/workspaces/{workspaceId}/members/${memberId}`),
        body: { role: "member" },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ id: memberId, role: "member" });
          expect(await memberRole(memberId)).toBe("member");
        },
        refused: async () => expect(await memberRole(memberId)).toBe("viewer"),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/members/{memberId}",
    expect: {
      owner: 204,
      admin: 204,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const memberId = await freshMember("viewer");
      return {
        path: ws(`/v1/workspaces/{workspaceId}/members/${memberId}`),
        allowed: async () => expect(await memberRole(memberId)).toBeUndefined(),
        refused: async () => expect(await memberRole(memberId)).toBe("viewer"),
      };
    },
  },

  // Invitations
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/invitations",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const invitationId = await freshInvitation();
      return {
        allowed: (r) =>
          expect(r.json.items).toContainEqual(
            expect.objectContaining({ id: invitationId, status: "pending" }),
          ),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/invitations",
    expect: {
      owner: 201,
      admin: 201,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const email = `${unique("invited")}@example.com`;
      const invitations = () =>
        db().selectFrom("invitation").select("status").where("email", "=", email).execute();
      return {
        body: { email, role: "viewer" },
        allowed: async (r) => {
          expect(r.json).toMatchObject({
            email,
            role: "viewer",
            status: "pending",
            workspaceId: w.workspaceId,
          });
          expect(await invitations()).toEqual([{ status: "pending" }]);
        },
        refused: async () => expect(await invitations()).toEqual([]),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/invitations/{invitationId}",
    expect: {
      owner: 204,
      admin: 204,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const invitationId = await freshInvitation();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/invitations/${invitationId}`),
        allowed: async () => expect(await invitationStatus(invitationId)).toBe("canceled"),
        refused: async () => expect(await invitationStatus(invitationId)).toBe("pending"),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/invitations",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: 200,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async (caller) => {
      const email = emailOf(caller) ?? `${unique("nobody")}@example.com`;
      const { invitationId } = await invitationFromHost(email);
      return {
        allowed: (r) => {
          expect(r.json.items).toContainEqual(
            expect.objectContaining({ id: invitationId, email, status: "pending" }),
          );
          for (const item of r.json.items) expect(item.email).toBe(email);
        },
      };
    },
  },
  {
    method: "POST",
    path: "/v1/invitations/{invitationId}/accept",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: 200,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async (caller) => {
      const email = emailOf(caller) ?? `${unique("nobody")}@example.com`;
      const { workspaceId, invitationId } = await invitationFromHost(email);
      return {
        path: `/v1/invitations/${invitationId}/accept`,
        allowed: async (r) => {
          expect(r.json).toMatchObject({ workspaceId, role: "viewer" });
          expect(await invitationStatus(invitationId)).toBe("accepted");
          expect(await memberRole(r.json.memberId)).toBe("viewer");
        },
        refused: async () => expect(await invitationStatus(invitationId)).toBe("pending"),
      };
    },
  },

  // API keys
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/api-keys",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async (caller) => ({
      allowed: (r) => {
        const names = r.json.items.map((item: { name: string }) => item.name);
        // The owner's "matrix" key: admins see every key, members only their own.
        if (caller === "member") expect(names).not.toContain("matrix");
        else expect(names).toContain("matrix");
        for (const item of r.json.items) expect(item).not.toHaveProperty("key");
      },
    }),
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/api-keys",
    expect: {
      owner: 201,
      admin: 201,
      member: 201,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const name = unique("made-key");
      const keys = () => db().selectFrom("apikey").select("id").where("name", "=", name).execute();
      return {
        body: { name, role: "viewer" },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ name, role: "viewer", enabled: true });
          expect(r.json.key).toMatch(/^cub_/);
          expect(await keys()).toHaveLength(1);
        },
        refused: async () => expect(await keys()).toHaveLength(0),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/api-keys/{keyId}",
    // The key is the owner's: admins revoke any key, a member only their own.
    expect: {
      owner: 204,
      admin: 204,
      member: [404, "API_KEY_NOT_FOUND"],
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const keyId = await ownersKey();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/api-keys/${keyId}`),
        allowed: async () => expect(await keyEnabled(keyId)).toBe(false),
        refused: async () => expect(await keyEnabled(keyId)).toBe(true),
      };
    },
  },

  // Connector credentials
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/connector-credentials",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => {
      const id = await freshCredential();
      return {
        allowed: (r) => {
          expect(r.json.items).toContainEqual(expect.objectContaining({ id, kind: "github" }));
          expect(r.text).not.toContain("first secret");
        },
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/connector-credentials",
    expect: {
      owner: 201,
      admin: 201,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const name = unique("new-cred");
      const rows = () =>
        db().selectFrom("connector_credentials").select("id").where("name", "=", name).execute();
      return {
        body: { name, kind: "slack", secret: "xoxb-secret" },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ name, kind: "slack" });
          expect(r.text).not.toContain("xoxb-secret");
          expect(await rows()).toHaveLength(1);
        },
        refused: async () => expect(await rows()).toHaveLength(0),
      };
    },
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/connector-credentials/{credentialId}/secret",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const id = await freshCredential();
      const before = (await credential(id))?.ciphertext;
      return {
        path: ws(`/v1/workspaces/{workspaceId}/connector-credentials/${id}/secret`),
        body: { secret: "second secret" },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ id });
          expect((await credential(id))?.ciphertext).not.toBe(before);
        },
        refused: async () => expect((await credential(id))?.ciphertext).toBe(before),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/connector-credentials/{credentialId}",
    expect: {
      owner: 204,
      admin: 204,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const id = await freshCredential();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/connector-credentials/${id}`),
        allowed: async () => expect(await credential(id)).toBeUndefined(),
        refused: async () => expect(await credential(id)).toBeDefined(),
      };
    },
  },

  // Audit
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/audit-events",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => ({
      path: ws("/v1/workspaces/{workspaceId}/audit-events?action=workspace.created"),
      allowed: (r) => {
        expect(r.json.items).toEqual([
          expect.objectContaining({ action: "workspace.created", workspaceId: w.workspaceId }),
        ]);
      },
    }),
  },
  {
    method: "GET",
    path: "/v1/deployment/audit-events",
    expect: deploymentOwnerOnly,
    prepare: async () => ({
      path: "/v1/deployment/audit-events?action=deployment.owner_assigned",
      allowed: (r) =>
        expect(r.json.items).toEqual([
          expect.objectContaining({
            action: "deployment.owner_assigned",
            actor: expect.objectContaining({ id: w.people.owner.userId }),
          }),
        ]),
    }),
  },

  // Events
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/events",
    expect: membersAndKeys(200),
    prepare: async () => ({
      allowed: (r) => {
        expect(r.headers.get("content-type")).toContain("text/event-stream");
        expect(r.text).toContain(`event: ready\ndata: {"workspaceId":"${w.workspaceId}"}`);
      },
    }),
  },

  // Deployment
  {
    method: "GET",
    path: "/v1/deployment/settings",
    expect: deploymentOwnerOnly,
    prepare: async () => ({
      allowed: (r) => expect(r.json).toMatchObject({ ownerUserId: w.people.owner.userId, signupsOpen: true }),
    }),
  },
  {
    method: "PATCH",
    path: "/v1/deployment/settings",
    expect: deploymentOwnerOnly,
    prepare: async () => {
      const before = await settingsUpdatedAt();
      return {
        // Keeps sign-ups open: later rows sign new people up.
        body: { signupsOpen: true },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ signupsOpen: true });
          expect((await settingsUpdatedAt()).getTime()).toBeGreaterThanOrEqual(before.getTime());
        },
        refused: async () => expect((await settingsUpdatedAt()).getTime()).toBe(before.getTime()),
      };
    },
  },

  // Bots
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/bots",
    expect: {
      owner: 201,
      admin: 201,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const name = unique("new-bot");
      const named = () => db().selectFrom("bots").select("id").where("name", "=", name).execute();
      return {
        body: { name, charter: { purpose: "p", boundary: "b" } },
        allowed: async (r) => {
          expect(r.json).toMatchObject({ name, computerMode: "team", computerId: expect.any(String) });
          expect(await named()).toHaveLength(1);
        },
        refused: async () => expect(await named()).toHaveLength(0),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/bots",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => {
      const { id } = await freshBot();
      return { allowed: (r) => expect(r.json.items).toContainEqual(expect.objectContaining({ id })) };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => {
      const { id } = await freshBot();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/bots/${id}`),
        allowed: (r) => expect(r.json).toMatchObject({ id, status: "idle" }),
      };
    },
  },
  {
    method: "PATCH",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const { id } = await freshBot();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/bots/${id}`),
        body: { charter: { purpose: "changed" } },
        allowed: async () => expect((await botRow(id)).charter_purpose).toBe("changed"),
        refused: async () => expect((await botRow(id)).charter_purpose).toBe("matrix"),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}/mode",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const { id } = await freshBot();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/bots/${id}/mode`),
        body: { computerMode: "private", privacyReason: "matrix" },
        allowed: async () => expect((await botRow(id)).computer_mode).toBe("private"),
        refused: async () => expect((await botRow(id)).computer_mode).toBe("team"),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}/archive",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const { id } = await freshBot();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/bots/${id}/archive`),
        allowed: async () => expect((await botRow(id)).archived_at).not.toBeNull(),
        refused: async () => expect((await botRow(id)).archived_at).toBeNull(),
      };
    },
  },

  // Computers
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      allowed: (r) =>
        expect(r.json.items).toContainEqual(expect.objectContaining({ id: computerId, scope: "team" })),
    }),
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      path: ws(`/v1/workspaces/{workspaceId}/computers/${computerId}`),
      allowed: (r) => expect(r.json).toMatchObject({ id: computerId, state: "running" }),
    }),
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/start",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => {
      const id = await freshComputer(false);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/start`),
        allowed: async () => expect((await computerRow(id)).state).toBe("running"),
        refused: async () => expect((await computerRow(id)).state).toBe("stopped"),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/heartbeat",
    expect: {
      owner: 204,
      admin: 204,
      member: 204,
      viewer: 204,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 204,
    },
    prepare: async () => {
      const id = await freshComputer(false);
      await t.database.db
        .updateTable("computers")
        .set({ last_activity_at: null })
        .where("id", "=", id)
        .execute();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/heartbeat`),
        allowed: async () => expect((await computerRow(id)).last_activity_at).not.toBeNull(),
        refused: async () => expect((await computerRow(id)).last_activity_at).toBeNull(),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/stop",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const id = await freshComputer(true);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/stop`),
        allowed: async () => expect((await computerRow(id)).state).toBe("stopped"),
        refused: async () => expect((await computerRow(id)).state).toBe("running"),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/destroy",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: ROLE,
    },
    prepare: async () => {
      const id = await freshComputer(true);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/destroy`),
        allowed: async () =>
          expect(await computerRow(id)).toMatchObject({ state: "stopped", provider_ref: null }),
        refused: async () => expect((await computerRow(id)).provider_ref).not.toBeNull(),
      };
    },
  },

  // Egress policies: anyone in the workspace reads them; a signed-in admin changes them
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/egress-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      allowed: (r) => expect(EGRESS_LEVELS).toContain(r.json.level),
    }),
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/egress-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const host = `${unique("allowed")}.example.com`;
      const stored = async () =>
        (
          await db()
            .selectFrom("workspace_egress_policies")
            .select("allow")
            .where("workspace_id", "=", w.workspaceId)
            .executeTakeFirst()
        )?.allow.map((d) => d.host) ?? [];
      return {
        body: { level: "allowlist", allow: [{ host, ports: [443] }] },
        allowed: async () => expect(await stored()).toEqual([host]),
        refused: async () => expect(await stored()).not.toContain(host),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/egress-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      path: ws(`/v1/workspaces/{workspaceId}/computers/${computerId}/egress-policy`),
      allowed: (r) => expect(r.json).toMatchObject({ inherited: expect.any(Boolean), enforced: true }),
    }),
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/egress-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const id = await freshComputer(false);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/egress-policy`),
        body: { level: "offline" },
        allowed: async () => expect((await computerRow(id)).egress_level).toBe("offline"),
        refused: async () => expect((await computerRow(id)).egress_level).toBeNull(),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/egress-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: ROLE,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: PERSON,
    },
    prepare: async () => {
      const id = await freshComputer(false);
      const path = ws(`/v1/workspaces/{workspaceId}/computers/${id}/egress-policy`);
      expectStatus(await w.people.owner.put(path, { level: "open" }), 200);
      return {
        path,
        allowed: async () => expect((await computerRow(id)).egress_level).toBeNull(),
        refused: async () => expect((await computerRow(id)).egress_level).toBe("open"),
      };
    },
  },

  // Checkpoints
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints",
    expect: everyMember(200),
    prepare: async () => {
      const { id, checkpointId } = await checkpointedComputer();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/checkpoints`),
        allowed: (r) => expect(r.json.items.map((item: { id: string }) => item.id)).toEqual([checkpointId]),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints/{checkpointId}",
    expect: everyMember(200),
    prepare: async () => {
      const { id, checkpointId, base } = await checkpointedComputer();
      return {
        path: base,
        allowed: (r) => expect(r.json).toMatchObject({ id: checkpointId, computerId: id, reason: "manual" }),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints",
    expect: membersAndKeys(201),
    prepare: async () => {
      const id = await freshComputer(true);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/computers/${id}/checkpoints`),
        allowed: async (r) => {
          expect(r.json).toMatchObject({ computerId: id, reason: "manual" });
          expect(await checkpointCount(id)).toBe(1);
        },
        refused: async () => expect(await checkpointCount(id)).toBe(0),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints/{checkpointId}/restore",
    expect: adminsOnly(200),
    prepare: async () => {
      const { id, base } = await checkpointedComputer();
      return {
        path: `${base}/restore`,
        body: { into: "current" },
        allowed: async () => expect(await auditsOf(id, "checkpoint.restored")).toBe(1),
        refused: async () => expect(await auditsOf(id, "checkpoint.restored")).toBe(0),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints/{checkpointId}/archive",
    expect: adminsOnly(200),
    prepare: async () => {
      const { id, base } = await checkpointedComputer();
      return {
        path: `${base}/archive`,
        allowed: async (r) => {
          expect(r.headers.get("content-type")).toBe("application/x-tar");
          expect(await auditsOf(id, "checkpoint.downloaded")).toBe(1);
        },
        refused: async () => expect(await auditsOf(id, "checkpoint.downloaded")).toBe(0),
      };
    },
  },

  // Screens
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/capabilities",
    expect: {
      owner: 201,
      admin: 201,
      member: 201,
      viewer: 201,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 201,
    },
    prepare: async () => ({
      path: screen(0, "/capabilities"),
      body: { mode: "view" },
      allowed: (r) => expect(r.json).toMatchObject({ mode: "view", token: expect.any(String) }),
    }),
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control",
    expect: {
      owner: 201,
      admin: 201,
      member: 201,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 201,
    },
    prepare: async (caller) => {
      await freeScreen(1);
      return {
        path: screen(1, "/control"),
        allowed: async (r) => {
          expect(r.json).toMatchObject({ screen: 1 });
          expect(await liveLease(1)).toMatchObject(
            caller === "key"
              ? { id: r.json.leaseId, holder_type: "api_key" }
              : { id: r.json.leaseId, holder_type: "user", holder_id: w.people[caller as Role].userId },
          );
        },
        refused: async () => expect(await liveLease(1)).toBeUndefined(),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => {
      const { leaseId } = await heldBy("owner", 2);
      return {
        path: screen(2, "/control"),
        allowed: (r) =>
          expect(r.json).toMatchObject({ leaseId, holder: { type: "user", id: w.people.owner.userId } }),
      };
    },
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control/{leaseId}/renew",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async (caller) => {
      const { leaseId } = await heldBy(caller, 3);
      const before = (await leaseRow(leaseId)).expires_at;
      return {
        path: screen(3, `/control/${leaseId}/renew`),
        allowed: async (r) => {
          expect(r.json).toMatchObject({ leaseId, screen: 3 });
          expect((await leaseRow(leaseId)).expires_at.getTime()).toBeGreaterThanOrEqual(before.getTime());
          expect(await auditedFor(leaseId, "screen.control_renewed")).toBe(1);
        },
        refused: async () => {
          expect((await leaseRow(leaseId)).expires_at.getTime()).toBe(before.getTime());
          expect(await auditedFor(leaseId, "screen.control_renewed")).toBe(0);
        },
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}/control/{leaseId}",
    expect: {
      owner: 204,
      admin: 204,
      member: 204,
      viewer: ROLE,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 204,
    },
    prepare: async (caller) => {
      const { leaseId } = await heldBy(caller, 4);
      return {
        path: screen(4, `/control/${leaseId}`),
        allowed: async () => expect(await leaseRow(leaseId)).toMatchObject({ release_reason: "released" }),
        refused: async () => expect((await leaseRow(leaseId)).released_at).toBeNull(),
      };
    },
  },

  // Computer tools (people's shell and files on the whole home)
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/shell",
    expect: adminsOnly(200),
    prepare: async () => {
      const marker = unique("shell");
      const command = `echo ${marker}`;
      return {
        path: onComputer("/shell"),
        body: { command },
        allowed: async (r) => {
          expect(r.text).toContain(`"data":"${marker}\\n"`);
          expect(await computerAudits("computer.shell", "command", command)).toBe(1);
        },
        refused: async () => expect(await computerAudits("computer.shell", "command", command)).toBe(0),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/files",
    expect: membersAndKeys(200),
    prepare: async () => {
      const name = unique("listed");
      await placeFile(`shared/${name}`, "here");
      return {
        path: onComputer("/files?path=shared"),
        allowed: (r) => expect(r.json.items).toContainEqual(expect.objectContaining({ name, size: 4 })),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/files",
    expect: adminsOnly(204),
    prepare: async () => {
      const path = `shared/${unique("doomed")}`;
      await placeFile(path, "bye");
      const present = async () => (await w.people.owner.get(fileOnComputer(path))).status;
      return {
        path: onComputer(`/files?path=${path}`),
        allowed: async () => {
          expect(await present()).toBe(404);
          expect(await computerAudits("computer.file_deleted", "path", path)).toBe(1);
        },
        refused: async () => {
          expect(await present()).toBe(200);
          expect(await computerAudits("computer.file_deleted", "path", path)).toBe(0);
        },
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/files/content",
    expect: membersAndKeys(200),
    prepare: async () => {
      const path = `shared/${unique("read")}`;
      await placeFile(path, "hi");
      return {
        path: fileOnComputer(path),
        allowed: (r) => {
          expect(r.text).toBe("hi");
          expect(r.headers.get("content-disposition")).toContain("attachment");
        },
      };
    },
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/computers/{computerId}/files/content",
    expect: adminsOnly(204),
    prepare: async () => {
      const path = `shared/${unique("written")}`;
      const stored = () => w.people.owner.get(fileOnComputer(path));
      return {
        path: fileOnComputer(path),
        body: "written",
        headers: { "content-type": "application/octet-stream" },
        allowed: async () => {
          expect((await stored()).text).toBe("written");
          expect(await computerAudits("computer.file_written", "path", path)).toBe(1);
        },
        refused: async () => {
          expect((await stored()).status).toBe(404);
          expect(await computerAudits("computer.file_written", "path", path)).toBe(0);
        },
      };
    },
  },

  // Sessions
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}/sessions",
    expect: membersAndKeys(201),
    prepare: async () => {
      await endSessions();
      const bot = await freshBot();
      const leases = () =>
        db().selectFrom("execution_leases").selectAll().where("bot_id", "=", bot.id).execute();
      return {
        path: sessionsOf(bot.id),
        allowed: async (r) => {
          expect(r.json).toMatchObject({ botId: bot.id, status: "open", screen: expect.any(Number) });
          expect(await leases()).toEqual([expect.objectContaining({ id: r.json.sessionId, status: "open" })]);
        },
        refused: async () => expect(await leases()).toEqual([]),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/sessions",
    expect: everyMember(200),
    prepare: async () => {
      const { sessionId } = await freshSession("owner");
      return {
        allowed: (r) =>
          expect(r.json.items).toEqual([expect.objectContaining({ sessionId, status: "open" })]),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}",
    expect: everyMember(200),
    prepare: async () => {
      const session = await freshSession("owner");
      return {
        path: session.path(),
        allowed: (r) => expect(r.json).toMatchObject({ sessionId: session.sessionId, fence: session.fence }),
      };
    },
  },
  toolRow("POST", "/heartbeat", 200, { audit: "session.renewed" }),
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/end",
    expect: membersAndKeys(200),
    prepare: async (caller) => {
      const session = await freshSession(caller);
      return {
        path: session.path("/end"),
        body: { outcome: "success" },
        headers: session.headers,
        allowed: async () =>
          expect(await sessionRow(session.sessionId)).toMatchObject({ status: "ended", outcome: "success" }),
        refused: async () => expect(await sessionRow(session.sessionId)).toMatchObject({ status: "open" }),
      };
    },
  },

  // Session tools
  toolRow("POST", "/observe", 200, {
    allowed: (r) => expect(r.headers.get("content-type")).toBe("image/png"),
  }),
  toolRow("POST", "/act", 200, { body: { actions: [{ type: "move", x: 1, y: 1 }] }, audit: "session.acted" }),
  toolRow("POST", "/open-path", LAUNCH_FAILED, { body: { path: "" } }),
  toolRow("POST", "/launch-app", LAUNCH_FAILED, { body: { app: "terminal" } }),
  toolRow("POST", "/shell", 200, {
    body: { command: "echo matrix" },
    audit: "session.shell",
    allowed: (r) => expect(r.text).toContain('"data":"matrix\\n"'),
  }),
  toolRow("GET", "/files", 200, { allowed: (r) => expect(r.json.items).toEqual(expect.any(Array)) }),
  toolRow("DELETE", "/files", 204, {
    query: "?path=doomed.txt",
    before: (session) => writeThrough(session, "doomed.txt", "bye"),
    audit: "session.file_deleted",
  }),
  toolRow("GET", "/files/content", 200, {
    query: "?path=hello.txt",
    before: (session) => writeThrough(session, "hello.txt", "hi"),
    allowed: (r) => expect(r.text).toBe("hi"),
  }),
  toolRow("PUT", "/files/content", 204, {
    query: "?path=written.txt",
    body: "written",
    headers: { "content-type": "application/octet-stream" },
    audit: "session.file_written",
  }),
  toolRow("GET", "/files/archive", 200, {
    allowed: (r) => expect(r.headers.get("content-type")).toBe("application/x-tar"),
  }),
  toolRow("POST", "/files/archive", 200, {
    audit: "session.files_uploaded",
    allowed: (r) => expect(r.json).toEqual({ files: 0, bytes: 0, skipped: 0 }),
  }),
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings",
    expect: ADMINS_ONLY,
    prepare: async () => {
      const id = await recording();
      return { allowed: (r) => expect(r.json.items.map((item: { id: string }) => item.id)).toContain(id) };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}",
    expect: ADMINS_ONLY,
    prepare: async () => {
      const id = await recording();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/recordings/${id}`),
        allowed: (r) => expect(r.json).toMatchObject({ id, status: "complete" }),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/content",
    expect: ADMINS_ONLY,
    prepare: async () => ({
      path: ws(`/v1/workspaces/{workspaceId}/recordings/${await recording()}/content`),
      allowed: (r) => expect(r.text.startsWith(RECORDING_FILE_MAGIC)).toBe(true),
    }),
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/inputs",
    expect: ADMINS_ONLY,
    prepare: async () => ({
      path: ws(`/v1/workspaces/{workspaceId}/recordings/${await recording()}/inputs`),
      allowed: (r) => expect(r.json).toEqual({ inputs: [] }),
    }),
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/frame",
    expect: ADMINS_ONLY,
    prepare: async () => ({
      path: ws(`/v1/workspaces/{workspaceId}/recordings/${await recording()}/frame?at=0`),
      allowed: (r) => expect(r.headers.get("content-type")).toBe("image/png"),
    }),
  },
  {
    method: "POST",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/exports",
    expect: { ...ADMINS_ONLY, owner: 202, admin: 202 },
    prepare: async () => {
      const id = await recording();
      const exports = () =>
        db().selectFrom("recording_exports").select("id").where("recording_id", "=", id).execute();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/recordings/${id}/exports`),
        body: { format: "webm" },
        allowed: async (r) => expect((await exports()).map((row) => row.id)).toEqual([r.json.id]),
        refused: async () => expect(await exports()).toEqual([]),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/exports/{exportId}",
    expect: ADMINS_ONLY,
    prepare: async () => {
      const { recordingId, exportId } = await recordingExport(false);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/recordings/${recordingId}/exports/${exportId}`),
        allowed: (r) => expect(r.json).toMatchObject({ id: exportId, recordingId, format: "webm" }),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}/exports/{exportId}/content",
    expect: ADMINS_ONLY,
    prepare: async () => {
      const { recordingId, exportId } = await recordingExport(true);
      return {
        path: ws(`/v1/workspaces/{workspaceId}/recordings/${recordingId}/exports/${exportId}/content`),
        allowed: (r) => expect(r.headers.get("content-type")).toBe("video/webm"),
      };
    },
  },
  {
    method: "DELETE",
    path: "/v1/workspaces/{workspaceId}/recordings/{recordingId}",
    expect: { ...ADMINS_ONLY, owner: 204, admin: 204, key: PERSON },
    prepare: async () => {
      const id = await recording();
      return {
        path: ws(`/v1/workspaces/{workspaceId}/recordings/${id}`),
        allowed: async () => expect(await recordingRecord(id)).toBeUndefined(),
        refused: async () => expect(await recordingRecord(id)).toEqual({ id }),
      };
    },
  },
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/recording-policy",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({
      allowed: (r) => expect(["off", "control", "control-and-sessions"]).toContain(r.json.mode),
    }),
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/recording-policy",
    expect: { ...ADMINS_ONLY, key: PERSON },
    prepare: async () => {
      const days = 1 + (++seq % 300);
      const stored = async () =>
        (
          await db()
            .selectFrom("workspace_recording_policies")
            .select("retention_days")
            .where("workspace_id", "=", w.workspaceId)
            .executeTakeFirst()
        )?.retention_days;
      return {
        body: { mode: "off", retentionDays: days, retentionBytes: null },
        allowed: async () => expect(await stored()).toBe(days),
        refused: async () => expect(await stored()).not.toBe(days),
      };
    },
  },

  // Embedding
  {
    method: "GET",
    path: "/v1/workspaces/{workspaceId}/embed-origins",
    expect: {
      owner: 200,
      admin: 200,
      member: 200,
      viewer: 200,
      outsider: HIDDEN,
      anonymous: UNAUTHENTICATED,
      key: 200,
    },
    prepare: async () => ({ allowed: (r) => expect(r.json).toMatchObject({ origins: expect.any(Array) }) }),
  },
  {
    method: "PUT",
    path: "/v1/workspaces/{workspaceId}/embed-origins",
    expect: { ...ADMINS_ONLY, key: PERSON },
    prepare: async () => {
      const origin = `https://${unique("embedder")}.example.com`;
      const stored = async () =>
        (
          await db()
            .selectFrom("workspace_embed_origins")
            .select("origins")
            .where("workspace_id", "=", w.workspaceId)
            .executeTakeFirst()
        )?.origins ?? [];
      return {
        body: { origins: [origin] },
        allowed: async () => expect(await stored()).toEqual([origin]),
        refused: async () => expect(await stored()).not.toContain(origin),
      };
    },
  },
];

const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

const CASES = MATRIX.flatMap((row) =>
  CALLERS.map((caller) => ({ route: routeKey(row.method, row.path), caller, row })),
);

describe("role matrix", () => {
  it("has one row per /v1 route of the OpenAPI document, and no other", async () => {
    const documented = documentedRoutes(await openApiDocument(t.client()))
      .filter((route) => route.path.startsWith("/v1/"))
      .map((route) => routeKey(route.method, route.path))
      .sort();
    const tabled = MATRIX.map((row) => routeKey(row.method, row.path)).sort();
    expect(new Set(tabled).size).toBe(tabled.length);
    expect(documented.length).toBeGreaterThan(0);
    expect(tabled).toEqual(documented);
  });

  it("is run with the world's owner as the deployment owner", async () => {
    expect(expectStatus(await w.people.owner.get("/v1/me"), 200).json).toMatchObject({
      isDeploymentOwner: true,
    });
    expect(expectStatus(await w.people.admin.get("/v1/me"), 200).json).toMatchObject({
      isDeploymentOwner: false,
    });
  });

  for (const { route, caller, row } of CASES)
    it(`${route} as ${caller}`, async () => {
      const prepared: Prepared = row.prepare ? await row.prepare(caller) : {};
      const path = prepared.path ?? ws(row.path);
      expect(path).not.toMatch(/[{}]/);
      const response = await send(caller, row.method, path, prepared.body, prepared.headers);
      const expected = row.expect[caller];
      const [status, code] = typeof expected === "number" ? [expected, null] : expected;
      expect(response.status, response.text.slice(0, 300)).toBe(status);
      if (code === null) {
        await prepared.allowed?.(response);
        return;
      }
      expect(response.headers.get("content-type")).toContain("application/problem+json");
      expect(response.json).toMatchObject({ status, code });
      await prepared.refused?.();
    });
});
