import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApi, startApi } from "../src/server.ts";
import { expectStatus, startTestApi, type TestApi, TestClient } from "../testing/harness.ts";
import {
  createBot,
  freeWorkspaceSessions,
  type OpenedSession,
  problem,
  SessionClient,
  sleep,
} from "../testing/sessions.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * Sessions (execution leases) and their screens on the fake provider: one open session per bot,
 * fences, heartbeats, ends, expiry and reclaim, screen allocation on Team and Private computers.
 * The same behaviour on real Docker computers is in sessions.docker.test.ts.
 */
let t: TestApi;
let w: World;
let key: string;
let keyId: string;
/** The member's sessions (a person) and the API key's (an automation). */
let member: SessionClient;
let automation: SessionClient;

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "sessions");
  const made = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "robot", role: "member" }),
    201,
  ).json;
  key = made.key;
  keyId = made.id;
  member = new SessionClient({ client: w.people.member }, w.workspaceId);
  automation = new SessionClient({ client: t.client(), apiKey: key }, w.workspaceId);
});
afterAll(() => t?.close());

const db = () => t.database.db;
const bot = (mode: "team" | "private" = "team") => createBot(w.people.admin, w.workspaceId, mode);
const audits = (action: string, sessionId: string) =>
  db()
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", sessionId)
    .orderBy("id")
    .execute();
const screenLease = (sessionId: string) =>
  db().selectFrom("screen_leases").selectAll().where("execution_lease_id", "=", sessionId).executeTakeFirst();
/** Ends every open session of the workspace behind the API's back, so screens start free. */
const freeAll = () => freeWorkspaceSessions(db(), w.workspaceId);

describe("opening a session", () => {
  it("starts the bot's Team Computer and leases a screen, fenced and audited", async () => {
    await freeAll();
    const b = await bot();
    const s = await automation.opened(b.id);
    expect(s).toMatchObject({
      botId: b.id,
      computerId: b.computerId,
      screen: 0,
      status: "open",
      outcome: null,
      holder: { type: "api_key", id: keyId, name: "robot" },
    });
    expect(s.fence).toBeGreaterThan(0);
    expect(new Date(s.expiresAt).getTime()).toBeGreaterThan(Date.now() + 50_000);
    const computer = await db()
      .selectFrom("computers")
      .selectAll()
      .where("id", "=", b.computerId)
      .executeTakeFirstOrThrow();
    expect(computer).toMatchObject({ state: "running", bot_id: null });
    expect(computer.last_activity_at).not.toBeNull();
    expect(await screenLease(s.sessionId)).toMatchObject({
      screen_index: 0,
      bot_id: b.id,
      released_at: null,
    });
    const [opened] = await audits("session.opened", s.sessionId);
    expect(opened).toMatchObject({ actor_type: "api_key", actor_id: keyId });
    expect(opened?.data).toMatchObject({ fence: s.fence, botId: b.id, screen: 0 });

    // Anyone in the workspace may look; the list shows open sessions only.
    const seen = expectStatus(await w.people.viewer.get(member.pathOf(s)), 200).json;
    expect(seen).toMatchObject({ sessionId: s.sessionId, fence: s.fence, status: "open" });
    const list = expectStatus(
      await w.people.viewer.get(`/v1/workspaces/${w.workspaceId}/sessions`),
      200,
    ).json;
    expect(list.items.map((item: OpenedSession) => item.sessionId)).toContain(s.sessionId);
    const ofBot = expectStatus(
      await w.people.viewer.get(`/v1/workspaces/${w.workspaceId}/sessions?botId=${b.id}`),
      200,
    ).json;
    expect(ofBot.items).toEqual([expect.objectContaining({ sessionId: s.sessionId })]);
    expectStatus(await automation.end(s), 200);
  });

  it("refuses a second session of the same bot, naming the holder", async () => {
    const b = await bot();
    const first = await member.opened(b.id);
    const busy = problem(await automation.open(b.id), 409, "COMPUTER_BUSY");
    expect(busy.detail).toContain(w.people.member.email);
    expect(busy.detail).toContain(first.sessionId);
    // the holder also as fields, for clients that name it without parsing prose
    expect(busy).toMatchObject({
      holder: { type: "user", id: first.holder.id, sessionId: first.sessionId, expiresAt: first.expiresAt },
    });
    // The same holder too: one session per bot, whoever asks.
    problem(await member.open(b.id), 409, "COMPUTER_BUSY");
    expectStatus(await member.end(first), 200);
    const byKey = await automation.opened(b.id);
    expect(byKey.fence).toBeGreaterThan(first.fence);
    expect(problem(await member.open(b.id), 409, "COMPUTER_BUSY").detail).toContain('API key "robot"');
    expectStatus(await automation.end(byKey), 200);
  });

  it("gives exactly one of two simultaneous opens for a bot", async () => {
    const b = await bot();
    const answers = await Promise.all([member.open(b.id), automation.open(b.id)]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    const winner = answers.find((r) => r.status === 201)?.json as OpenedSession;
    const loser = answers.find((r) => r.status === 409);
    expect(loser?.json).toMatchObject({ code: "COMPUTER_BUSY" });
    const open = await db()
      .selectFrom("execution_leases")
      .select("id")
      .where("bot_id", "=", b.id)
      .where("status", "=", "open")
      .execute();
    expect(open).toEqual([{ id: winner.sessionId }]);
    await (winner.holder.type === "user" ? member : automation).end(winner);
  });

  it("is refused for unknown, other workspaces' and archived bots, and for viewers", async () => {
    problem(await member.open("no-such-bot"), 404, "BOT_NOT_FOUND");
    const outsider = new SessionClient({ client: w.people.outsider }, w.otherWorkspaceId);
    const mine = await bot();
    problem(await outsider.open(mine.id), 404, "BOT_NOT_FOUND");
    problem(
      await new SessionClient({ client: w.people.viewer }, w.workspaceId).open(mine.id),
      403,
      "ROLE_FORBIDDEN",
    );
    const archived = await bot();
    expectStatus(
      await w.people.admin.post(`/v1/workspaces/${w.workspaceId}/bots/${archived.id}/archive`),
      200,
    );
    problem(await member.open(archived.id), 409, "BOT_ARCHIVED");
  });
});

describe("screens", () => {
  it("gives Team bots distinct screens and a Private bot screen 0 of its own computer", async () => {
    await freeAll();
    const [a, b, p] = [await bot(), await bot(), await bot("private")];
    const [sa, sb] = await Promise.all([member.opened(a.id), automation.opened(b.id)]);
    expect([sa.screen, sb.screen].sort()).toEqual([0, 1]);
    expect(sa.computerId).toBe(sb.computerId);
    const sp = await member.opened(p.id);
    expect(sp).toMatchObject({ screen: 0, computerId: p.computerId });
    expect(sp.computerId).not.toBe(sa.computerId);

    // Ending frees the screen for the next bot.
    const freed = sa.screen;
    expectStatus(await member.end(sa), 200);
    expect((await screenLease(sa.sessionId))?.released_at).not.toBeNull();
    const c = await bot();
    expect((await member.opened(c.id)).screen).toBe(freed);
  });

  it("opens without a screen when all 8 are held: graphical tools refuse, shell and files work", async () => {
    await freeAll();
    const held: OpenedSession[] = [];
    for (let i = 0; i < 8; i++) held.push(await member.opened((await bot()).id));
    expect(held.map((s) => s.screen).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const ninth = await automation.opened((await bot()).id);
    expect(ninth.screen).toBeNull();
    expect(await screenLease(ninth.sessionId)).toBeUndefined();
    problem(await automation.observe(ninth), 409, "MULTI_SCREEN_UNAVAILABLE");
    problem(
      await automation.tool(ninth, "POST", "/act", { actions: [{ type: "key", key: "a" }] }),
      409,
      "MULTI_SCREEN_UNAVAILABLE",
    );
    const { exit, stdout } = await automation.shell(ninth, { command: "echo still works" });
    expect(stdout).toBe("still works\n");
    expect(exit).toMatchObject({ code: 0 });
    expectStatus(await automation.write(ninth, "notes.txt", "hi"), 204);
    // A held screen still observes.
    expect((await member.observe(held[0] as OpenedSession)).status).toBe(200);
    await freeAll();
  });
});

describe("heartbeats, ends and fences", () => {
  it("heartbeats extend the session and its screen; only with its fence and by its holder", async () => {
    const b = await bot();
    const s = await member.opened(b.id);
    await sleep(20);
    const renewed = expectStatus(await member.heartbeat(s), 200).json;
    expect(new Date(renewed.expiresAt).getTime()).toBeGreaterThan(new Date(s.expiresAt).getTime());
    expect(renewed.heartbeatAt).toBeDefined();
    expect((await screenLease(s.sessionId))?.expires_at.toISOString()).toBe(renewed.expiresAt);
    expect((await audits("session.renewed", s.sessionId))[0]?.data).toMatchObject({ fence: s.fence });

    problem(await member.heartbeat(s, s.fence + 1000), 409, "STALE_FENCE");
    const missing = await w.people.member.post(member.pathOf(s, "/heartbeat"));
    expect(problem(missing, 400, "VALIDATION_FAILED")).toMatchObject({
      errors: [expect.objectContaining({ path: "header.x-session-fence" })],
    });
    problem(
      await w.people.member.post(member.pathOf(s, "/heartbeat"), undefined, {
        headers: { "x-session-fence": "abc" },
      }),
      400,
      "VALIDATION_FAILED",
    );
    // Another member may not drive it, even with the fence.
    problem(
      await new SessionClient({ client: w.people.admin }, w.workspaceId).heartbeat(s),
      403,
      "NOT_SESSION_HOLDER",
    );
    problem(await automation.heartbeat(s), 403, "NOT_SESSION_HOLDER");
    problem(await automation.write(s, "x.txt", "x"), 403, "NOT_SESSION_HOLDER");
    expectStatus(await member.end(s), 200);
  });

  it("ends with an outcome, releasing the screen; the ended session's fence is stale", async () => {
    const b = await bot();
    const s = await automation.opened(b.id);
    const ended = expectStatus(await automation.end(s, "failure"), 200).json;
    expect(ended).toMatchObject({ status: "ended", outcome: "failure", sessionId: s.sessionId });
    expect(ended.endedAt).not.toBeNull();
    const [audit] = await audits("session.ended", s.sessionId);
    expect(audit).toMatchObject({ actor_type: "api_key", actor_id: keyId });
    expect(audit?.data).toMatchObject({ outcome: "failure", fence: s.fence, screen: s.screen });

    expect(problem(await automation.end(s), 409, "STALE_FENCE").detail).toContain("ended (failure)");
    problem(await automation.heartbeat(s), 409, "STALE_FENCE");
    problem(await automation.write(s, "late.txt", "late"), 409, "STALE_FENCE");
    problem(await automation.shell(s, { command: "echo late" }).then((r) => r.response), 409, "STALE_FENCE");
    problem(await automation.end(s, "bogus" as "success"), 400, "VALIDATION_FAILED");
    expect(expectStatus(await w.people.viewer.get(member.pathOf(s)), 200).json).toMatchObject({
      status: "ended",
      outcome: "failure",
    });
  });

  it("may be ended by an admin or owner, not another member", async () => {
    const b = await bot();
    const s = await automation.opened(b.id);
    const otherMember = new SessionClient({ client: w.people.member }, w.workspaceId);
    problem(await otherMember.end(s), 403, "NOT_SESSION_HOLDER");
    const ended = expectStatus(
      await new SessionClient({ client: w.people.admin }, w.workspaceId).end(s, "failure"),
      200,
    );
    expect(ended.json).toMatchObject({ status: "ended" });
    expect((await audits("session.ended", s.sessionId))[0]).toMatchObject({
      actor_id: w.people.admin.userId,
    });
  });

  it("is not visible from another workspace, nor under another bot", async () => {
    const [a, b] = [await bot(), await bot()];
    const s = await member.opened(a.id);
    problem(await w.people.member.get(member.pathOf({ ...s, botId: b.id })), 404, "SESSION_NOT_FOUND");
    problem(
      await w.people.outsider.get(
        `/v1/workspaces/${w.otherWorkspaceId}/bots/${a.id}/sessions/${s.sessionId}`,
      ),
      404,
      "SESSION_NOT_FOUND",
    );
    problem(await w.people.outsider.get(member.pathOf(s)), 404, "WORKSPACE_NOT_FOUND");
    expectStatus(await member.end(s), 200);
  });
});

describe("expiry", () => {
  let short: RunningApi;
  let shortKeyed: SessionClient;

  beforeAll(async () => {
    // A second api replica on the same database whose sessions last 1.5 s past their heartbeat.
    short = await startApi(
      { ...t.api.deps.env, port: 0, sessions: { leaseMs: 1_500 } },
      { database: t.database },
    );
    shortKeyed = new SessionClient(
      { client: new TestClient(short.url, t.responses), apiKey: key },
      w.workspaceId,
    );
  });
  afterAll(() => short?.close());

  it("reclaims a session that stopped heartbeating with a higher fence; the old fence is refused", async () => {
    await freeAll();
    const b = await bot();
    const first = await shortKeyed.opened(b.id);
    expect(first.screen).toBe(0);
    expectStatus(await shortKeyed.write(first, "before.txt", "first"), 204);
    // Still live: heartbeats keep it, a second opener is refused.
    await sleep(800);
    expectStatus(await shortKeyed.heartbeat(first), 200);
    problem(await shortKeyed.open(b.id), 409, "COMPUTER_BUSY");
    await sleep(1_800);

    const listed = expectStatus(
      await w.people.viewer.get(`/v1/workspaces/${w.workspaceId}/sessions?botId=${b.id}`),
      200,
    );
    expect(listed.json.items).toEqual([]);
    expect(expectStatus(await w.people.viewer.get(member.pathOf(first)), 200).json.status).toBe("expired");

    const second = await shortKeyed.opened(b.id);
    expect(second.fence).toBeGreaterThan(first.fence);
    // Its screen was freed and is handed out again.
    expect(second.screen).toBe(0);
    const stale = problem(await shortKeyed.write(first, "after.txt", "stale"), 409, "STALE_FENCE");
    expect(stale.detail).toContain("expired");
    expect(stale.detail).toContain(second.sessionId);
    problem(await shortKeyed.heartbeat(first), 409, "STALE_FENCE");
    problem(await shortKeyed.end(first), 409, "STALE_FENCE");
    // A fence from the newer session does not revive the old one either.
    problem(await shortKeyed.write(first, "after.txt", "stale", second.fence), 409, "STALE_FENCE");
    problem(await shortKeyed.read(second, "after.txt"), 404, "FILE_NOT_FOUND");
    expect((await shortKeyed.read(second, "before.txt")).text).toBe("first");

    // expired once: by the housekeeping sweep, or by the new session's reclaim if it came first
    const expirations = await audits("session.expired", first.sessionId);
    expect(expirations).toHaveLength(1);
    expect(expirations[0]).toMatchObject({ actor_type: "system" });
    expect(expirations[0]?.data).toMatchObject({ fence: first.fence, screen: 0 });
    const [opened] = await audits("session.opened", second.sessionId);
    const reclaimed = (opened?.data as { reclaimed?: string[] } | undefined)?.reclaimed;
    expect([[], [first.sessionId]]).toContainEqual(reclaimed);
    expectStatus(await shortKeyed.end(second), 200);
  });
});
