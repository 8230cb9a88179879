import { type Kysely, sql } from "kysely";

/**
 * Session recording (issue 23): what each workspace records and keeps, the catalogue of
 * recordings, the seek index of their sealed chunks, and video exports made from them.
 *
 * The policy has its own table, as the egress policy does (the workspace itself is Better Auth's
 * `organization` row): no row means `off`, kept for ever, no size cap.
 *
 * A recording row is made when its capability is minted (`pending`), so its id can travel in the
 * capability and in the audit row of the grant; ingest moves it to `recording`, then `complete` or
 * `incomplete`. `ingested_at` is when its upload was last heard of: a `recording` row whose upload
 * went quiet is one whose api or proxy went away, and housekeeping ends it incomplete.
 * At most one recording of a session is live at a time: replicas starting one together race on
 * the unique index, and the loser steps back.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("workspace_recording_policies")
    .addColumn("workspace_id", "text", (c) =>
      c.primaryKey().references("organization.id").onDelete("cascade"),
    )
    .addColumn("mode", "text", (c) =>
      c.notNull().check(sql`mode in ('off', 'control', 'control-and-sessions')`),
    )
    .addColumn("retention_days", "integer", (c) => c.check(sql`retention_days > 0`))
    .addColumn("retention_bytes", "bigint", (c) => c.check(sql`retention_bytes > 0`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable("recordings")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("screen", "integer", (c) => c.notNull().check(sql`screen between 0 and 7`))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('control', 'session')`))
    // no foreign keys: a recording outlives the lease and the bot it was made under
    .addColumn("session_id", "text")
    .addColumn("control_lease_id", "text")
    .addColumn("bot_id", "text")
    .addColumn("actor_type", "text", (c) => c.notNull().check(sql`actor_type in ('user', 'api_key')`))
    .addColumn("actor_id", "text", (c) => c.notNull())
    .addColumn("actor_name", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) =>
      c.notNull().check(sql`status in ('pending', 'recording', 'complete', 'incomplete')`),
    )
    .addColumn("incomplete_reason", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("started_at", "timestamptz")
    .addColumn("ended_at", "timestamptz")
    .addColumn("ingested_at", "timestamptz")
    .addColumn("duration_ms", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("width", "integer")
    .addColumn("height", "integer")
    .addCheckConstraint(
      "recordings_kind_fits",
      sql`(kind = 'control') = (control_lease_id is not null) and (kind = 'session') = (session_id is not null)`,
    )
    .addCheckConstraint(
      "recordings_reason_fits",
      sql`(status = 'incomplete') = (incomplete_reason is not null)`,
    )
    .execute();
  await db.schema
    .createIndex("recordings_workspace_started")
    .on("recordings")
    .columns(["workspace_id", "started_at", "id"])
    .execute();
  await db.schema
    .createIndex("recordings_live_session")
    .unique()
    .on("recordings")
    .column("session_id")
    .where(sql<boolean>`status in ('pending', 'recording')`)
    .execute();

  await db.schema
    .createTable("recording_chunks")
    .addColumn("recording_id", "text", (c) => c.notNull().references("recordings.id").onDelete("cascade"))
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("first_at", "bigint", (c) => c.notNull())
    .addColumn("last_at", "bigint", (c) => c.notNull())
    .addColumn("offset", "bigint", (c) => c.notNull())
    .addColumn("bytes", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("recording_chunks_pk", ["recording_id", "seq"])
    .execute();

  await db.schema
    .createTable("recording_exports")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("recording_id", "text", (c) => c.notNull().references("recordings.id").onDelete("cascade"))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("format", "text", (c) => c.notNull().check(sql`format in ('webm')`))
    .addColumn("status", "text", (c) =>
      c.notNull().defaultTo("queued").check(sql`status in ('queued', 'running', 'ready', 'failed')`),
    )
    .addColumn("progress", "real", (c) => c.notNull().defaultTo(0).check(sql`progress between 0 and 1`))
    .addColumn("bytes", "bigint")
    .addColumn("error", "text")
    .addColumn("requested_by", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("finished_at", "timestamptz")
    .execute();
  await db.schema
    .createIndex("recording_exports_recording")
    .on("recording_exports")
    .column("recording_id")
    .execute();
}
