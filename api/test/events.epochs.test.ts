import type { DatabaseHandle } from "@cubicle/db";
import { openTestDatabase } from "@cubicle/db/testing";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectIncreasing, followEvents } from "../testing/events.ts";
import { deploymentSecrets, startTestApi, type TestApi } from "../testing/harness.ts";
import { createBot, problem } from "../testing/sessions.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * Event epochs: a database restored onto another Postgres server keeps the old server's (large)
 * transaction ids in its audit rows while the new server counts from low ones. Simulated here by
 * an audit row recorded with a transaction id far beyond the server's, then an api restart on the
 * same database: it begins a new epoch, and streams go on from there.
 */
let database: DatabaseHandle;
let t: TestApi;
let w: World;
const secrets = deploymentSecrets();
const logged: string[] = [];
/** An api of the deployment on `database`, its warnings collected in `logged`. */
const start = () =>
  startTestApi(
    { ...secrets, LOG_LEVEL: "warn" },
    { database, logDestination: { write: (line: string) => logged.push(line) } },
  );

beforeAll(async () => {
  database = await openTestDatabase();
  t = await start();
  w = await buildWorld(t, "epochs");
});
afterAll(async () => {
  await t?.close();
  await database?.close();
});

const epochs = () => database.db.selectFrom("event_epochs").selectAll().orderBy("id").execute();
const restartedWarnings = () =>
  logged.filter((line) => line.includes("live events start a new epoch")).map((line) => JSON.parse(line));

describe("event epochs", () => {
  it("begin at start-up after a restore onto another server; streams and resumes go on in the new one", async () => {
    const { owner, member } = w.people;
    const before = await followEvents(member, w.workspaceId);
    expect(before.readyId).toMatch(/^0-\d+-\d+$/);
    const first = await createBot(owner, w.workspaceId, "private");
    const seen = await before.until("computer.created", (e) => e.target.id === first.computerId);
    const second = await createBot(owner, w.workspaceId, "private");
    await before.until("computer.created", (e) => e.target.id === second.computerId);
    await before.close();
    expect(seen.id).toMatch(/^0-\d+-\d+$/);

    // what a restored row looks like: its transaction id is another server's, far above this one's
    await sql`
      insert into audit_events (workspace_id, actor_type, action, target_type, target_id, xact)
      values (${w.workspaceId}, 'system', 'computer.started', 'computer', 'restored', '999999999999'::xid8)
    `.execute(database.db);
    const { restoredId } = await database.db
      .selectFrom("audit_events")
      .select((eb) => eb.fn.max("id").as("restoredId"))
      .executeTakeFirstOrThrow();
    expect(await epochs()).toEqual([]);
    expect(restartedWarnings()).toEqual([]);

    await t.close();
    t = await start();
    const [epoch] = await epochs();
    expect(await epochs()).toHaveLength(1);
    expect(epoch).toMatchObject({ id: 1, after_audit_id: Number(restoredId) });
    expect(restartedWarnings()).toEqual([
      expect.objectContaining({
        level: 40,
        epoch: 1,
        afterAuditId: Number(restoredId),
        rowXact: "999999999999",
      }),
    ]);

    // a stream started now starts in the new epoch, and gets what is recorded next
    const fresh = await followEvents(member.at(t.api.url), w.workspaceId);
    expect(fresh.readyId).toBe("1-0-0");
    // a client that last saw an event before the restore (the first bot's)
    const resumed = await followEvents(member.at(t.api.url), w.workspaceId, { lastEventId: seen.id });
    // it starts at the restore: it is told so by `ready`
    expect(resumed.readyId).toBe("1-0-0");
    const third = await createBot(owner.at(t.api.url), w.workspaceId, "private");
    await fresh.until("computer.created", (e) => e.target.id === third.computerId);
    await resumed.until("computer.created", (e) => e.target.id === third.computerId);
    for (const stream of [fresh, resumed]) {
      // the events since the restore, and none from before it (the second bot, the restored row)
      expect(stream.events().map((e) => [e.type, e.data.target.id])).toEqual([
        ["computer.created", third.computerId],
      ]);
      expect(stream.events()[0]?.id).toMatch(/^1-\d+-\d+$/);
      expectIncreasing([stream.readyId, ...stream.events().map((e) => e.id)]);
    }
    // resuming from an event of the new epoch goes on just after it
    const cut = fresh.events()[0]?.id ?? "";
    await Promise.all([fresh.close(), resumed.close()]);
    const fourth = await createBot(owner.at(t.api.url), w.workspaceId, "private");
    const again = await followEvents(member.at(t.api.url), w.workspaceId, { lastEventId: cut });
    expect(again.readyId).toBe(cut);
    await again.until("computer.created", (e) => e.target.id === fourth.computerId);
    expect(again.events().map((e) => e.data.target.id)).toEqual([fourth.computerId]);
    await again.close();

    // an epoch this database does not have is refused; the current one is not
    for (const future of ["2-0-0", `2-${cut.split("-").slice(1).join("-")}`])
      problem(
        await member.at(t.api.url).get(`/v1/workspaces/${w.workspaceId}/events?lastEventId=${future}`),
        400,
        "INVALID_EVENT_ID",
      );
    await (await followEvents(member.at(t.api.url), w.workspaceId, { lastEventId: "1-0-0" })).close();

    // the next start finds nothing amiss: the restored row is of the past epoch
    await t.close();
    t = await start();
    expect(await epochs()).toHaveLength(1);
    expect(restartedWarnings()).toHaveLength(1);
  });
});
