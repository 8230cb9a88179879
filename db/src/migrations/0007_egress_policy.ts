import { type Kysely, sql } from "kysely";

/**
 * Egress policies (issue 20): a workspace's, which its computers inherit (no row: the `default`
 * level), and a computer's own overriding it (both columns null: it inherits). The destinations
 * are a JSON array of `{ host, ports }`; the api validates them, the database keeps the shape's
 * invariants: only an `allowlist` has destinations, and it has at least one.
 *
 * What the refusal job has read of each computer's refusals is kept here too, not in a replica's
 * memory: the job runs on whichever replica holds its lock, and a cursor lost with a replica (or a
 * restart) would audit the same refusals again and fold counts into the wrong windows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const level = (column: string) => sql.raw(`${column} in ('open', 'default', 'allowlist', 'offline')`);
  const allowFits = (levelColumn: string, allowColumn: string) =>
    sql.raw(
      `jsonb_typeof(${allowColumn}) = 'array' and ` +
        `(${levelColumn} = 'allowlist') = (jsonb_array_length(${allowColumn}) > 0)`,
    );

  await db.schema
    .createTable("workspace_egress_policies")
    .addColumn("workspace_id", "text", (c) =>
      c.primaryKey().references("organization.id").onDelete("cascade"),
    )
    .addColumn("level", "text", (c) => c.notNull().check(level("level")))
    .addColumn("allow", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("workspace_egress_allow_fits", allowFits("level", "allow"))
    .execute();

  await db.schema
    .alterTable("computers")
    .addColumn("egress_level", "text", (c) => c.check(level("egress_level")))
    .execute();
  await db.schema.alterTable("computers").addColumn("egress_allow", "jsonb").execute();
  await db.schema
    .alterTable("computers")
    .addCheckConstraint(
      "computers_egress_allow_fits",
      sql`(egress_level is null and egress_allow is null) or (egress_level is not null and ${allowFits("egress_level", "egress_allow")})`,
    )
    .execute();

  await db.schema
    .createTable("computer_egress_refusals")
    .addColumn("computer_id", "text", (c) => c.primaryKey().references("computers.id").onDelete("cascade"))
    .addColumn("workspace_id", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("machine_ref", "text", (c) => c.notNull())
    .addColumn("cursor", "text")
    .addColumn("machine_total", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("refused_total", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("windows", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}
