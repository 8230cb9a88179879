import { type Kysely, sql } from "kysely";

/**
 * Event epochs: positions of live events (0008) compare transaction ids, and those are one server's
 * counter. A dump restored onto another server (`npm run restore` on a fresh Postgres) keeps the old
 * server's large ids in `audit_events.xact` while the new server counts again from low ones, so new
 * events would sort before every restored position. When the api finds that at start-up
 * (api/src/events/epochs.ts) it begins a new epoch here: only audit rows after `after_audit_id` are
 * events of it, and positions carry the epoch. No row: epoch 0, every row.
 *
 * The index on (xact, id) lets that start-up check ask for a row at or above the server's next
 * transaction id without reading the table (0008's index leads with the workspace).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("event_epochs")
    .addColumn("id", "serial", (c) => c.primaryKey())
    .addColumn("after_audit_id", "bigint", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("audit_events_by_position")
    .on("audit_events")
    .columns(["xact", "id"])
    .execute();
}
