/**
 * An api replica killed while it holds a housekeeping job's advisory lock, in the middle of the
 * job's round: the other replica takes the job over within one period, and what the dead one was
 * doing is either done whole by the survivor or not at all (nothing ended without its record).
 */

import { CONTROL_EXPIRY_EVERY_MS, lockKeyOf, SESSION_EXPIRY_EVERY_MS } from "@cubicle/api/housekeeping";
import { type ApiProcess, startApiProcess } from "@cubicle/api/testing/api-process";
import { deploymentSecrets, expectStatus, type TestClient } from "@cubicle/api/testing/harness";
import { createBot, SessionClient } from "@cubicle/api/testing/sessions";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { type Database, type DatabaseHandle, openDatabase } from "@cubicle/db";
import { createTestDatabaseUrl } from "@cubicle/db/testing";
import { type Kysely, sql } from "kysely";
import { afterEach, expect, it } from "vitest";
import { type Tally, tally } from "../../src/tally.ts";

const LEASE_MS = 1_500;
/**
 * Past one period, the time for Postgres to read the end of the dead replica's connections (the
 * kill closes them) and let its locks go; a lock left to TCP keepalive would take minutes.
 */
const SLACK_MS = 750;
const NAMES = ["replica-a", "replica-b"] as const;

let database: DatabaseHandle | undefined;
const replicas = new Map<string, ApiProcess>();

afterEach(async () => {
  await Promise.all([...replicas.values()].map((replica) => replica.close()));
  replicas.clear();
  await database?.close();
});

/** Two replicas of one deployment on a database of their own, and the test's handle on it. */
async function startReplicas(): Promise<{ db: Kysely<Database>; world: World }> {
  const url = await createTestDatabaseUrl();
  database = await openDatabase({ databaseUrl: url });
  const shared = {
    NODE_ENV: "test",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    ...deploymentSecrets(),
    SANDBOX_PROVIDER: "fake",
    CONTROL_LEASE_MS: String(LEASE_MS),
    SESSION_LEASE_MS: String(LEASE_MS),
  };
  // named in pg_stat_activity, so that a lock's holder is known by replica; one after the other,
  // or both would migrate the empty database at once
  for (const name of NAMES) {
    const named = new URL(url);
    named.searchParams.set("application_name", name);
    replicas.set(name, await startApiProcess({ ...shared, DATABASE_URL: named.toString() }));
  }
  return {
    db: database.db,
    world: await buildWorld(replicas.get("replica-a") as ApiProcess, "replica-kill"),
  };
}

/** The replica (by application name) whose backend holds `key` as a session advisory lock. */
async function lockHolder(db: Kysely<Database>, key: number): Promise<string | undefined> {
  // a bigint key shows in pg_locks as its high and low 32 bits
  const { rows } = await sql<{ name: string }>`
    select a.application_name as name from pg_locks l join pg_stat_activity a on a.pid = l.pid
    where l.locktype = 'advisory' and l.granted and l.objsubid = 1
      and l.classid = ${key < 0 ? 0xffffffff : 0} and l.objid = ${key >>> 0}`.execute(db);
  return rows[0]?.name;
}

/** Replicas with a backend waiting for a row lock: a job round stuck in its UPDATE. */
async function waitingOnRows(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select distinct application_name as name from pg_stat_activity
    where wait_event_type = 'Lock' and application_name like 'replica-%'`.execute(db);
  return rows.map((row) => row.name);
}

/** Locks a row in a transaction of the test's own until the returned function is called. */
async function holdRow(
  db: Kysely<Database>,
  table: "control_leases" | "execution_leases",
  id: string,
): Promise<() => Promise<void>> {
  let release = () => {};
  const released = new Promise<void>((done) => {
    release = done;
  });
  let locked = () => {};
  const isLocked = new Promise<void>((done) => {
    locked = done;
  });
  const transaction = db.transaction().execute(async (trx) => {
    await trx.selectFrom(table).select("id").where("id", "=", id).forUpdate().execute();
    locked();
    await released;
  });
  await Promise.race([isLocked, transaction]);
  return async () => {
    release();
    await transaction;
  };
}

/**
 * Kills the replica whose round of `job` is under way on the expired row, and waits for the other
 * to hold the job's lock, within one period. The test holds the row, so the round stays inside its
 * UPDATE, holding the lock, for as long as it likes: a slow round, killed half-way. Once the row is
 * free the dead replica's UPDATE still runs in Postgres. Returns the survivor.
 */
async function killTheLockHolder(
  db: Kysely<Database>,
  faults: Tally,
  job: { name: string; everyMs: number },
  row: Parameters<typeof holdRow>[1],
  id: string,
): Promise<ApiProcess> {
  const releaseRow = await holdRow(db, row, id);
  const key = lockKeyOf(job.name);
  const [doomed, survivor] = await until(
    `a replica's ${job.name} round to be stuck on the expired row`,
    async () => {
      const holder = await lockHolder(db, key);
      const stuck = await waitingOnRows(db);
      if (!holder || !stuck.includes(holder)) return undefined;
      return [holder, NAMES.find((name) => name !== holder) as string] as const;
    },
    LEASE_MS + 10_000,
  );
  faults.tried();
  await (replicas.get(doomed) as ApiProcess).kill("SIGKILL");
  replicas.delete(doomed);
  const killedAt = Date.now();
  await until("the survivor to hold the job's lock", async () =>
    (await lockHolder(db, key)) === survivor ? true : undefined,
  );
  const takeover = Date.now() - killedAt;
  console.log(`${survivor} took ${job.name} over ${takeover} ms after ${doomed} was killed`);
  expect(takeover).toBeLessThan(job.everyMs + SLACK_MS);
  await releaseRow();
  return replicas.get(survivor) as ApiProcess;
}

/** The audit actions recorded about `targetId` (with `leaseId` in their data, when given), in order. */
async function auditOf(db: Kysely<Database>, targetId: string, leaseId?: string): Promise<string> {
  let query = db.selectFrom("audit_events").select("action").where("target_id", "=", targetId);
  if (leaseId) query = query.where(sql<string>`data->>'leaseId'`, "=", leaseId);
  const records = await query.orderBy("id").execute();
  return records.map((record) => record.action).join(", ");
}

async function startedComputer(owner: TestClient, workspaceId: string) {
  const bot = await createBot(owner, workspaceId);
  const path = `/v1/workspaces/${workspaceId}/computers/${bot.computerId}`;
  expectStatus(await owner.post(`${path}/start`), 200);
  return { bot, path };
}

it("kill an api replica while it holds the housekeeping lock: another takes over within one period", async (context) => {
  const faults = tally(context, "faults");
  const { db, world } = await startReplicas();
  const { owner, member } = world.people;
  const { bot, path } = await startedComputer(owner, world.workspaceId);
  const lease = expectStatus(await member.post(`${path}/screens/0/control`), 201).json;

  const survivor = await killTheLockHolder(
    db,
    faults,
    { name: "control-lease-expiry", everyMs: CONTROL_EXPIRY_EVERY_MS },
    "control_leases",
    lease.leaseId,
  );
  const seen = member.at(survivor.url);
  await until("the survivor to end the expired control lease", async () =>
    (await seen.get(`${path}/screens/0/control`)).status === 404 ? true : undefined,
  );

  const lost: string[] = [];
  const leases = await db
    .selectFrom("control_leases")
    .selectAll()
    .where("computer_id", "=", bot.computerId)
    .execute();
  if (leases.length !== 1) lost.push(`${leases.length} control leases, not the one granted`);
  for (const row of leases) {
    if (row.release_reason !== "expired") lost.push(`lease ${row.id} ended as ${row.release_reason}`);
    const actions = await auditOf(db, bot.computerId, row.id);
    if (actions !== "screen.control_granted, screen.control_expired")
      lost.push(`lease ${row.id} has the audit records [${actions}]`);
  }
  faults.lost(lost);
}, 45_000);

it("kill an api replica in the middle of expiring a session: another takes over and ends it whole", async (context) => {
  const faults = tally(context, "faults");
  const { db, world } = await startReplicas();
  const { owner, member } = world.people;
  const { bot } = await startedComputer(owner, world.workspaceId);
  const session = await new SessionClient({ client: member }, world.workspaceId).opened(bot.id);

  await killTheLockHolder(
    db,
    faults,
    { name: "session-lease-expiry", everyMs: SESSION_EXPIRY_EVERY_MS },
    "execution_leases",
    session.sessionId,
  );
  const ended = async () =>
    db
      .selectFrom("execution_leases")
      .selectAll()
      .where("id", "=", session.sessionId)
      .executeTakeFirstOrThrow();
  await until("the survivor to expire the session", async () =>
    (await ended()).status === "open" ? undefined : true,
  );

  const lost: string[] = [];
  const row = await ended();
  if (row.status !== "expired") lost.push(`session ${row.id} ended as ${row.status}`);
  const screens = await db
    .selectFrom("screen_leases")
    .select("id")
    .where("execution_lease_id", "=", row.id)
    .where("released_at", "is", null)
    .execute();
  if (screens.length > 0) lost.push(`session ${row.id} still holds ${screens.length} screens`);
  const actions = await auditOf(db, row.id);
  if (actions !== "session.opened, session.expired")
    lost.push(`session ${row.id} has the audit records [${actions}]`);
  faults.lost(lost);
}, 45_000);
