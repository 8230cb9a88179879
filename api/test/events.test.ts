import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectIncreasing, followEvents } from "../testing/events.ts";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { createBot, problem, SessionClient } from "../testing/sessions.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * GET /v1/workspaces/{id}/events on one api (the fake provider): what a member sees of a session's
 * life, a checkpoint's and a screen's control, in order; resuming; who may follow.
 */
let t: TestApi;
let w: World;

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "events");
});
afterAll(() => t?.close());

const eventsPath = (query = "") => `/v1/workspaces/${w.workspaceId}/events${query}`;
const computerPath = (computerId: string, rest: string) =>
  `/v1/workspaces/${w.workspaceId}/computers/${computerId}${rest}`;

/** A Private bot's session opened and ended by the member, a checkpoint taken and restored, control of its screen taken and released. */
async function lifeOfABot() {
  const { member, owner } = w.people;
  const bot = await createBot(owner, w.workspaceId, "private");
  const sessions = new SessionClient({ client: member }, w.workspaceId);
  const s = await sessions.opened(bot.id);
  expectStatus(await sessions.end(s), 200);
  return { bot, s, member, owner };
}

describe("workspace events", () => {
  it("sends a session's life, a checkpoint's and a screen's control in order, each position after the last", async () => {
    const stream = await followEvents(w.people.member, w.workspaceId);
    const { s, member, owner } = await lifeOfABot();
    // the session's end is checkpointed in the background; waited for, so the order below is fixed
    await stream.until("checkpoint.created", (e) => e.data.reason === "session-success");
    const taken = expectStatus(await owner.post(computerPath(s.computerId, "/checkpoints")), 201);
    expectStatus(
      await owner.post(computerPath(s.computerId, `/checkpoints/${taken.json.id}/restore`), {
        into: "current",
      }),
      200,
    );
    const lease = expectStatus(await member.post(computerPath(s.computerId, "/screens/0/control")), 201).json;
    expectStatus(await member.delete(computerPath(s.computerId, `/screens/0/control/${lease.leaseId}`)), 204);
    await stream.until("screen.control_released");

    const events = stream.events();
    expect(events.map((e) => [e.type, e.data.target?.id])).toEqual([
      ["computer.created", s.computerId],
      ["computer.started", s.computerId],
      ["session.opened", s.sessionId],
      ["session.ended", s.sessionId],
      ["checkpoint.created", s.computerId],
      ["checkpoint.created", s.computerId],
      ["checkpoint.restored", s.computerId],
      ["screen.control_granted", s.computerId],
      ["screen.control_released", s.computerId],
    ]);
    const [, started, opened, ended, , manual, restored] = events.map((e) => e.data);
    expect(started).toMatchObject({
      workspaceId: w.workspaceId,
      actor: { type: "user", label: member.email },
      data: { state: "running", fresh: true },
    });
    expect(opened.data).toMatchObject({ botId: s.botId, computerId: s.computerId, fence: s.fence });
    expect(ended.data).toMatchObject({ outcome: "success" });
    expect(manual).toMatchObject({
      actor: { label: owner.email },
      data: { reason: "manual", checkpointId: taken.json.id },
    });
    expect(restored.data).toMatchObject({ checkpointId: taken.json.id, into: "current" });
    for (const event of events) {
      expect(event.data.id).toBe(event.id);
      expect(event.data.type).toBe(event.type);
      expect(Object.keys(event.data).sort()).toEqual(
        ["actor", "data", "id", "occurredAt", "target", "type", "workspaceId"].sort(),
      );
    }
    expectIncreasing([stream.readyId, ...events.map((e) => e.id)]);
    // what the audit log keeps of the callers stays there: no address, no request id
    expect(stream.reader.raw).not.toContain("127.0.0.1");
    expect(stream.reader.raw).not.toContain(taken.headers.get("x-request-id"));
    expect(stream.reader.raw).not.toMatch(/"ip"|"requestId"|actorId/);
    for (const event of events) expect(Object.keys(event.data.actor).sort()).toEqual(["label", "type"]);
    await stream.close();
  });

  it("starts now without an id, and resumes after one with exactly what followed it", async () => {
    const before = await createBot(w.people.owner, w.workspaceId, "private");
    const stream = await followEvents(w.people.admin, w.workspaceId);
    const { s } = await lifeOfABot();
    await stream.until("checkpoint.created", (e) => e.target.id === s.computerId);
    const seen = stream.events();
    // the earlier bot's computer was created before the stream began: not sent
    expect(seen.some((e) => e.data.target?.id === before.computerId)).toBe(false);
    expect(seen.map((e) => e.type)).toEqual([
      "computer.created",
      "computer.started",
      "session.opened",
      "session.ended",
      "checkpoint.created",
    ]);
    await stream.close();

    // as EventSource reconnects: the header, after the second event
    const cut = seen[1]?.id ?? "";
    const resumed = await followEvents(w.people.member, w.workspaceId, { lastEventId: cut });
    expect(resumed.readyId).toBe(cut);
    await resumed.until("checkpoint.created", (e) => e.id === seen.at(-1)?.id);
    expect(resumed.events()).toEqual(seen.slice(2));
    // …and then live: the next event comes once, after them
    const next = await lifeOfABot();
    await resumed.until("session.opened", (e) => e.target.id === next.s.sessionId);
    expect(resumed.events().slice(0, 3)).toEqual(seen.slice(2));
    expect(resumed.events()[3]?.type).toBe("computer.created");
    await resumed.close();

    // the query parameter does the same for clients that cannot set headers; the header wins,
    // since a reconnecting EventSource sends its newest id there and the URL unchanged
    const byQuery = await followEvents(w.people.member, w.workspaceId, { query: `lastEventId=${cut}` });
    await byQuery.until("checkpoint.created", (e) => e.id === seen.at(-1)?.id);
    expect(byQuery.events().slice(0, 3)).toEqual(seen.slice(2));
    await byQuery.close();
    const both = await followEvents(w.people.member, w.workspaceId, {
      query: `lastEventId=${seen[0]?.id}`,
      lastEventId: seen.at(-1)?.id ?? "",
    });
    await both.until("session.opened", (e) => e.target.id === next.s.sessionId);
    expect(both.events()[0]?.type).toBe("computer.created");
    expect(both.events()[0]?.data.target.id).not.toBe(s.computerId);
    await both.close();
  });

  it("refuses an id it did not give out, before the stream starts", async () => {
    const { member } = w.people;
    for (const bad of [
      "abc",
      "12",
      "1-",
      "-1",
      "0-1-",
      "0--1",
      "1-2-3-4",
      "01-2",
      "0-01-2",
      "00-1-2",
      "1_2",
      "0-99999999999999999999999-1",
      "0-1-99999999999999999",
      "2147483648-1-2",
      // well formed, but of an epoch this database never had (it has only epoch 0)
      "1-2-3",
      "2147483647-0-0",
    ]) {
      const response = await member.get(eventsPath(), { headers: { "last-event-id": bad } });
      problem(response, 400, "INVALID_EVENT_ID");
    }
    problem(await member.get(eventsPath("?lastEventId=x")), 400, "INVALID_EVENT_ID");
    problem(await member.get(eventsPath("?lastEventId=5-0-0")), 400, "INVALID_EVENT_ID");
  });

  it("reads an id of the form given out before epochs, <xact>-<id>, as one of epoch 0", async () => {
    const stream = await followEvents(w.people.member, w.workspaceId);
    const bot = await createBot(w.people.owner, w.workspaceId, "private");
    await stream.until("computer.created", (e) => e.target.id === bot.computerId);
    await stream.close();
    const [created] = stream.events();
    expect(created?.id).toMatch(/^0-\d+-\d+$/);
    const legacy = created?.id?.replace(/^0-/, "") ?? "";
    const resumed = await followEvents(w.people.member, w.workspaceId, { lastEventId: legacy });
    expect(resumed.readyId).toBe(created?.id);
    await resumed.close();
  });

  it("is for members and above: a viewer is refused, a stranger finds no workspace", async () => {
    problem(await w.people.viewer.get(eventsPath()), 403, "ROLE_FORBIDDEN");
    problem(await w.people.outsider.get(eventsPath()), 404, "WORKSPACE_NOT_FOUND");
    problem(await t.client().get(eventsPath()), 401, "UNAUTHENTICATED");
    for (const who of [w.people.owner, w.people.admin, w.people.member])
      await (await followEvents(who, w.workspaceId)).close();
  });

  it("sends only its own workspace's events", async () => {
    const mine = await followEvents(w.people.member, w.workspaceId);
    const theirs = await followEvents(w.people.outsider, w.otherWorkspaceId);
    const elsewhere = await createBot(w.people.outsider, w.otherWorkspaceId, "private");
    await theirs.until("computer.created", (e) => e.target.id === elsewhere.computerId);
    const here = await createBot(w.people.owner, w.workspaceId, "private");
    await mine.until("computer.created", (e) => e.target.id === here.computerId);
    expect(mine.events().map((e) => e.data.target.id)).toEqual([here.computerId]);
    await Promise.all([mine.close(), theirs.close()]);
  });
});
