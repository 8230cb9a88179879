import { type Kysely, sql } from "kysely";

/**
 * Live events (issue 22) are a projection of `audit_events`, read in order of (xact, id) where
 * `xact` is the id of the transaction that wrote the row. Ids come from a sequence, and concurrent
 * transactions commit out of id order, so "id > the last one seen" could skip a row that commits
 * later with a lower id; a reader instead takes only rows whose transaction is older than every
 * transaction still running (pg_snapshot_xmin), behind which nothing can appear any more.
 *
 * The default is set after the column is added, so existing rows keep null (they predate every
 * position a reader was given) instead of all getting this migration's transaction id in a rewrite.
 * No row is updated, so the append-only triggers have nothing to refuse.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("audit_events").addColumn("xact", sql`xid8`).execute();
  await sql`alter table audit_events alter column xact set default pg_current_xact_id()`.execute(db);
  await db.schema
    .createIndex("audit_events_by_workspace_position")
    .on("audit_events")
    .columns(["workspace_id", "xact", "id"])
    .execute();
}
