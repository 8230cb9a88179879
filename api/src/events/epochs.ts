import { createHash } from "node:crypto";
import type { Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import type { Logger } from "../observability/logger.ts";
import { invalidEventId, originOf, type Position } from "./position.ts";

/**
 * Event epochs (migration 0009). Positions compare transaction ids, which count up on one Postgres
 * server; a dump restored onto another server keeps the old server's (large) ids in
 * `audit_events.xact` while the new server counts again from low ones, so every new event would
 * sort before the positions streams start from, and none would ever be sent. A new epoch begins
 * after the restored rows: its events are the audit rows after its `after_audit_id`, ordered by the
 * new server's ids, and a position names its epoch.
 */
export interface Epoch {
  /** 0 before any epoch was recorded. */
  id: number;
  /** Its events are the audit rows with a larger id. */
  floor: number;
}

const FIRST: Epoch = { id: 0, floor: 0 };

/** The current epoch: the newest recorded, or epoch 0. */
export async function currentEpoch(db: Kysely<Database>): Promise<Epoch> {
  const row = await db
    .selectFrom("event_epochs")
    .select(["id", "after_audit_id"])
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  return row ? { id: row.id, floor: row.after_audit_id } : FIRST;
}

/**
 * Where a stream resuming after `after` starts: there, in the current epoch; at the beginning of
 * the current epoch for a position of an older one (everything since the restore: what came after
 * it is not lost; what was between the position and the restore is not sent); refused for a
 * position of an epoch that does not exist (yet).
 */
export function resumeFrom(after: Position, epoch: Epoch): Position {
  if (after.epoch > epoch.id) throw invalidEventId();
  return after.epoch < epoch.id ? originOf(epoch.id) : after;
}

/** A stable advisory lock key, so replicas of any version agree on it. */
const LOCK_KEY = createHash("sha256").update("cubicle/event-epochs").digest().readInt32BE(0);

/**
 * At api start-up, one replica at a time: begins a new epoch when the database was restored onto a
 * server whose transaction counter is behind the current epoch's rows (the largest `xact` among
 * them is at or above the next transaction id). Every row a snapshot sees was written by a
 * transaction that had its id before the snapshot was taken, so below the snapshot's xmax (the
 * next id the server hands out); a row at or above it comes from another server. One statement,
 * so the snapshot and the rows agree (no transaction committing in between can look like one).
 *
 * Cost: an index-only range scan of (xact, id) from the xmax up, stopping at the first row of the
 * epoch: nothing to read normally, one entry right after a restore. After a new epoch began, the
 * older epoch's rows above this server's counter are in that range and are stepped over (in the
 * index, about 30 ns each: 200,000 in 6 ms), until the counter passes them.
 */
export async function beginEpochIfRestored(db: Kysely<Database>, logger: Logger): Promise<Epoch | undefined> {
  const begun = await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${LOCK_KEY})`.execute(trx);
    const epoch = await currentEpoch(trx);
    const ahead = await trx
      .selectFrom("audit_events")
      .select([
        sql<string>`xact::text`.as("rowXact"),
        sql<string>`pg_snapshot_xmax(pg_current_snapshot())::text`.as("nextXact"),
      ])
      .where(sql<boolean>`xact >= pg_snapshot_xmax(pg_current_snapshot())`)
      .where("id", ">", epoch.floor)
      // in the (xact, id) index's order: without it the planner, unable to tell how many rows the
      // bound leaves, reads the table
      .orderBy("audit_events.xact")
      .limit(1)
      .executeTakeFirst();
    if (!ahead) return undefined;
    const { after } = await trx
      .selectFrom("audit_events")
      .select((eb) => eb.fn.coalesce(eb.fn.max("id"), sql.lit(0)).as("after"))
      .executeTakeFirstOrThrow();
    const { id } = await trx
      .insertInto("event_epochs")
      .values({ after_audit_id: Number(after) })
      .returning("id")
      .executeTakeFirstOrThrow();
    return { epoch: { id, floor: Number(after) }, ...ahead };
  });
  if (!begun) return undefined;
  logger.warn(
    {
      epoch: begun.epoch.id,
      afterAuditId: begun.epoch.floor,
      rowXact: begun.rowXact,
      nextXact: begun.nextXact,
    },
    "the database was restored onto another server; live events start a new epoch",
  );
  return begun.epoch;
}
