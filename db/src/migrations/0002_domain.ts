import { type Kysely, sql } from "kysely";

/**
 * Cubicle's own domain (docs/architecture.md, "Domain"). Workspaces, members and invitations are
 * Better Auth's organization tables from 0001; everything here points at them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("deployment_settings")
    .addColumn("id", "smallint", (c) => c.primaryKey().defaultTo(1).check(sql`id = 1`))
    .addColumn("owner_user_id", "text", (c) => c.references("user.id").onDelete("set null"))
    .addColumn("signups_open", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("computer_host", "text", (c) =>
      c.notNull().defaultTo("isolated").check(sql`computer_host in ('isolated', 'this-host')`),
    )
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`insert into deployment_settings (id) values (1)`.execute(db);

  await db.schema
    .createTable("bots")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("charter_purpose", "text", (c) => c.notNull())
    .addColumn("charter_boundary", "text", (c) => c.notNull())
    .addColumn("charter_privacy_reason", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("computer_mode", "text", (c) =>
      c.notNull().defaultTo("team").check(sql`computer_mode in ('team', 'private')`),
    )
    .addColumn("created_by", "text", (c) => c.references("user.id").onDelete("set null"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("archived_at", "timestamptz")
    .execute();
  await sql`create unique index bots_live_name on bots (workspace_id, lower(name)) where archived_at is null`.execute(
    db,
  );

  await db.schema
    .createTable("computers")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("bot_id", "text", (c) => c.references("bots.id").onDelete("cascade"))
    .addColumn("scope_key", "text", (c) => c.notNull().unique())
    .addColumn("home_key", "text", (c) => c.notNull().unique())
    .addColumn("provider_kind", "text", (c) => c.notNull())
    .addColumn("provider_ref", "text")
    .addColumn("state", "text", (c) =>
      c
        .notNull()
        .defaultTo("stopped")
        .check(sql`state in ('stopped', 'booting', 'running', 'suspending', 'suspended', 'error')`),
    )
    .addColumn("state_detail", "text")
    .addColumn("last_activity_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint(
      "computers_scope_matches_bot",
      sql`(bot_id is null and scope_key = 'team:' || workspace_id) or (bot_id is not null and scope_key = 'bot:' || bot_id)`,
    )
    .execute();

  await db.schema
    .createTable("checkpoints")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("parent_id", "text", (c) => c.references("checkpoints.id").onDelete("set null"))
    .addColumn("reason", "text", (c) =>
      c
        .notNull()
        .check(
          sql`reason in ('session-success', 'session-failure', 'stop', 'idle', 'manual', 'before-restore')`,
        ),
    )
    .addColumn("size_bytes", "bigint", (c) => c.notNull())
    .addColumn("file_count", "integer", (c) => c.notNull())
    .addColumn("sha256", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("checkpoints_by_computer")
    .on("checkpoints")
    .columns(["computer_id", "created_at"])
    .execute();

  // One sequence fences every lease: a newer grant always carries a larger fence, whichever kind it is.
  await sql`create sequence lease_fence`.execute(db);
  const fence = sql`nextval('lease_fence')`;

  await db.schema
    .createTable("execution_leases")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("bot_id", "text", (c) => c.notNull().references("bots.id").onDelete("cascade"))
    .addColumn("fence", "bigint", (c) => c.notNull().defaultTo(fence).unique())
    .addColumn("holder_type", "text", (c) => c.notNull().check(sql`holder_type in ('user', 'api_key')`))
    .addColumn("holder_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) =>
      c.notNull().defaultTo("open").check(sql`status in ('open', 'ended', 'expired')`),
    )
    .addColumn("outcome", "text", (c) => c.check(sql`outcome in ('success', 'failure')`))
    .addColumn("heartbeat_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("ended_at", "timestamptz")
    .execute();
  await sql`create unique index execution_leases_one_open_per_bot on execution_leases (bot_id) where status = 'open'`.execute(
    db,
  );

  await db.schema
    .createTable("screen_leases")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("bot_id", "text", (c) => c.notNull().references("bots.id").onDelete("cascade"))
    .addColumn("execution_lease_id", "text", (c) => c.references("execution_leases.id").onDelete("cascade"))
    .addColumn("screen_index", "smallint", (c) => c.notNull().check(sql`screen_index between 0 and 7`))
    .addColumn("fence", "bigint", (c) => c.notNull().defaultTo(fence).unique())
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("released_at", "timestamptz")
    .execute();
  await sql`create unique index screen_leases_one_per_screen on screen_leases (computer_id, screen_index) where released_at is null`.execute(
    db,
  );
  await sql`create unique index screen_leases_one_per_bot on screen_leases (computer_id, bot_id) where released_at is null`.execute(
    db,
  );

  await db.schema
    .createTable("control_leases")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("screen_index", "smallint", (c) => c.notNull().check(sql`screen_index between 0 and 7`))
    .addColumn("holder_user_id", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
    .addColumn("fence", "bigint", (c) => c.notNull().defaultTo(fence).unique())
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("released_at", "timestamptz")
    .addColumn("release_reason", "text", (c) =>
      c.check(sql`release_reason in ('released', 'expired', 'revoked')`),
    )
    .execute();
  await sql`create unique index control_leases_one_per_screen on control_leases (computer_id, screen_index) where released_at is null`.execute(
    db,
  );

  await db.schema
    .createTable("audit_events")
    .addColumn("id", "bigint", (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn("occurred_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    // No foreign keys: the record outlives the workspace, user or key it names.
    .addColumn("workspace_id", "text")
    .addColumn("actor_type", "text", (c) =>
      c.notNull().check(sql`actor_type in ('user', 'api_key', 'system', 'anonymous')`),
    )
    .addColumn("actor_id", "text")
    .addColumn("actor_label", "text")
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("target_type", "text")
    .addColumn("target_id", "text")
    .addColumn("ip", "text")
    .addColumn("request_id", "text")
    .addColumn("data", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema
    .createIndex("audit_events_by_workspace")
    .on("audit_events")
    .columns(["workspace_id", "id"])
    .execute();
  await sql`
    create function audit_events_are_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_events is append-only: % is not allowed', tg_op using errcode = 'insufficient_privilege';
    end;
    $$`.execute(db);
  await sql`
    create trigger audit_events_no_update_or_delete before update or delete on audit_events
    for each row execute function audit_events_are_append_only()`.execute(db);
  await sql`
    create trigger audit_events_no_truncate before truncate on audit_events
    for each statement execute function audit_events_are_append_only()`.execute(db);

  await db.schema
    .createTable("connector_credentials")
    .addColumn("id", "text", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()::text`))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("ciphertext", "text", (c) => c.notNull())
    .addColumn("created_by", "text", (c) => c.references("user.id").onDelete("set null"))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("connector_credentials_unique_name", ["workspace_id", "name"])
    .execute();
}
