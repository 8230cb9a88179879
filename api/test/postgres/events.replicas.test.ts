import type { DatabaseHandle } from "@cubicle/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectIncreasing, followEvents } from "../../testing/events.ts";
import { expectStatus, type Replicas, startReplicas, type TestApi } from "../../testing/harness.ts";
import { createBot, SessionClient, sleep } from "../../testing/sessions.ts";
import { buildWorld, type World } from "../../testing/world.ts";

/**
 * Live events across two api replicas of one deployment (one Postgres database, the same
 * secrets): what one replica records reaches the other's streams through LISTEN/NOTIFY, in the
 * order every reader sees, and a stream cut off resumes on the other replica without loss or
 * repeats. Postgres only: an embedded database belongs to one process.
 */
let deployment: Replicas;
let handles: DatabaseHandle[];
let replicas: TestApi[];
let w: World;

beforeAll(async () => {
  deployment = await startReplicas(2);
  ({ replicas, databases: handles } = deployment);
  w = await buildWorld(replicas[0] as TestApi, "events-replicas");
}, 120_000);

afterAll(async () => {
  await deployment?.close();
});

describe("workspace events on two replicas", () => {
  it("are read on one replica as the other records them, and resume on the other without loss or repeats", async () => {
    const [a, b] = replicas as [TestApi, TestApi];
    const member = w.people.member.at(a.api.url);
    const onB = member.at(b.api.url);
    const whole = await followEvents(onB, w.workspaceId);
    const first = await followEvents(onB, w.workspaceId);

    // a session's life, all of it on replica A
    const owner = w.people.owner.at(a.api.url);
    const bot = await createBot(owner, w.workspaceId, "private");
    const sessions = new SessionClient({ client: member }, w.workspaceId);
    const s = await sessions.opened(bot.id);
    expectStatus(await sessions.end(s), 200);
    await first.until("checkpoint.created", (e) => e.target.id === s.computerId);
    await first.close();

    // while nobody follows: a checkpoint taken and restored, on A
    const checkpoints = `/v1/workspaces/${w.workspaceId}/computers/${s.computerId}/checkpoints`;
    const taken = expectStatus(await owner.post(checkpoints), 201).json;
    expectStatus(await owner.post(`${checkpoints}/${taken.id}/restore`, { into: "current" }), 200);

    // resumed on A from the last event B sent
    const lastSeen = first.events().at(-1)?.id ?? "";
    const resumed = await followEvents(member, w.workspaceId, { lastEventId: lastSeen });
    await resumed.until("checkpoint.restored");
    await whole.until("checkpoint.restored");

    const stitched = [...first.events(), ...resumed.events()];
    expect(stitched.map((e) => e.type)).toEqual([
      "computer.created",
      "computer.started",
      "session.opened",
      "session.ended",
      "checkpoint.created",
      "checkpoint.created",
      "checkpoint.restored",
    ]);
    expect(stitched).toEqual(whole.events());
    expectIncreasing(stitched.map((e) => e.id));
    await Promise.all([whole.close(), resumed.close()]);
  });

  it("never skips an event whose transaction commits after a later one's", async () => {
    const [a, b] = replicas as [TestApi, TestApi];
    const stream = await followEvents(w.people.member.at(b.api.url), w.workspaceId);
    const audit = a.api.deps.audit;
    const record = (target: string) => (trx: Parameters<typeof audit.record>[1]) =>
      audit.record(
        {
          actor: { type: "system", id: null, label: "test" },
          workspaceId: w.workspaceId,
          action: "computer.started",
          target: { type: "computer", id: target },
        },
        trx,
      );

    // `early` takes the lower id and stays open while `late` records and commits
    let commit = () => {};
    let recorded = () => {};
    const recordedEarly = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    const early = handles[0]?.db.transaction().execute(async (trx) => {
      await record("early")(trx);
      recorded();
      await new Promise<void>((resolve) => {
        commit = resolve;
      });
    });
    await recordedEarly;
    await handles[1]?.db.transaction().execute(record("late"));
    const ids = await a.database.db
      .selectFrom("audit_events")
      .select(["id", "target_id"])
      .where("target_id", "in", ["early", "late"])
      .orderBy("id")
      .execute();
    // only `late` is visible yet: it committed, with the higher id
    expect(ids.map((row) => row.target_id)).toEqual(["late"]);

    // a reader going by id alone would send `late` now, and then never `early` (a lower id)
    await sleep(1_000);
    expect(stream.events()).toEqual([]);

    commit();
    await early;
    await stream.until("computer.started", (e) => e.target.id === "late");
    const sent = stream.events();
    expect(sent.map((e) => e.data.target.id)).toEqual(["early", "late"]);
    // <epoch>-<xact>-<id>: `early` has the lower audit id, and is sent first all the same
    expect(Number(sent[0]?.id?.split("-")[2])).toBeLessThan(Number(sent[1]?.id?.split("-")[2]));
    expectIncreasing(sent.map((e) => e.id));
    await stream.close();
  });
});
