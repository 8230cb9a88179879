import { type Kysely, sql } from "kysely";

/**
 * Checkpoints (docs/architecture.md, "Domain"): the catalog of revisions records what each one
 * added to the store, and checkpoints that failed wait here to be tried again (one per computer:
 * the next attempt records the home as it is then, whatever the reason of the first).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable("checkpoints")
    .addColumn("new_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable("checkpoint_retries")
    .addColumn("computer_id", "text", (c) => c.primaryKey().references("computers.id").onDelete("cascade"))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("reason", "text", (c) =>
      c
        .notNull()
        .check(
          sql`reason in ('session-success', 'session-failure', 'stop', 'idle', 'manual', 'before-restore')`,
        ),
    )
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("last_error", "text", (c) => c.notNull())
    .addColumn("next_attempt_at", "timestamptz", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}
