/**
 * Postgres restarted under load: the api keeps answering (a clear problem while the database is
 * away), reconnects by itself, and no answered change is half done: every bot it said it made
 * exists with its audit record, and every bot that exists has exactly one.
 */

import { expectStatus, startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { openDatabase } from "@cubicle/db";
import { createEmptyDatabase, startTemporaryPostgres, type TemporaryPostgres } from "@cubicle/db/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tally } from "../../src/tally.ts";

const WORKERS = 4;
/** How long the load runs after the restart, so that it is seen to recover. */
const AFTER_RESTART_MS = 8_000;

let server: TemporaryPostgres;
let t: TestApi;
let w: World;

beforeAll(async () => {
  // a server of its own: the run's shared one must not be restarted under other suites
  server = await startTemporaryPostgres();
  const database = await openDatabase({ databaseUrl: await createEmptyDatabase(server.url, "restarted") });
  t = await startTestApi({}, { database });
  w = await buildWorld(t, "database-restart");
});

afterAll(async () => {
  await t?.close();
  await t?.database.close();
  await server?.stop();
});

interface Answer {
  name: string;
  status: number;
  contentType: string | null;
  code: string | undefined;
}

it("Postgres restarted under load: the api reconnects, and every change it answered is whole", async (context) => {
  const faults = tally(context, "faults");
  const answers: Answer[] = [];
  let stopAt = Number.POSITIVE_INFINITY;
  const worker = async (index: number) => {
    for (let i = 0; Date.now() < stopAt; i++) {
      const name = `Load ${index}-${i}`;
      const response = await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/bots`, {
        name,
        charter: { purpose: "is made under load", boundary: "never leaves the test", privacyReason: "" },
        computerMode: "team",
      });
      answers.push({
        name,
        status: response.status,
        contentType: response.headers.get("content-type"),
        code: response.json?.code,
      });
    }
  };
  const load = Promise.all(Array.from({ length: WORKERS }, (_, index) => worker(index)));
  await until("some bots to be made", async () => (answers.length >= 20 ? true : undefined));
  faults.tried();
  await server.restart();
  stopAt = Date.now() + AFTER_RESTART_MS;
  await load;

  const refused = answers.filter((answer) => answer.status !== 201);
  // while it was away: problem JSON saying so, never a hang or a bare error
  for (const answer of refused) {
    expect(answer.contentType).toContain("application/problem+json");
    expect([answer.status, answer.code]).toEqual([503, "DATABASE_UNAVAILABLE"]);
  }
  if (refused.length > 0) faults.refused();
  // and it came back by itself: the last answers were all made
  expect(answers.slice(-WORKERS).map((answer) => answer.status)).toEqual(Array(WORKERS).fill(201));
  expect(expectStatus(await t.client().get("/health"), 200).json).toMatchObject({ db: "ok" });

  const db = t.database.db;
  const bots = await db
    .selectFrom("bots")
    .select(["id", "name"])
    .where("workspace_id", "=", w.workspaceId)
    .execute();
  const audits = await db
    .selectFrom("audit_events")
    .select("target_id")
    .where("action", "=", "bot.created")
    .where("workspace_id", "=", w.workspaceId)
    .execute();
  const made = new Set(bots.map((bot) => bot.name));
  const lost = answers
    .filter((answer) => answer.status === 201 && !made.has(answer.name))
    .map((answer) => `bot ${answer.name}, answered 201`);
  for (const bot of bots) {
    const records = audits.filter((audit) => audit.target_id === bot.id).length;
    if (records !== 1) lost.push(`bot ${bot.name} has ${records} bot.created records`);
  }
  faults.lost(lost);
});
