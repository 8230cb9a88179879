import { type Kysely, sql } from "kysely";

/**
 * Embedded live screens (issue 24).
 *
 * A workspace's embed origins: the web origins whose pages may open its screens through the proxy
 * and frame its embed page. No row means none. Narrowing the list takes access away from sockets
 * opened from a dropped origin, so a change announces itself on the access-change channel of
 * migration 0005, and every proxy checks its sockets of that workspace again.
 *
 * Control leases may now be held by an API key as well as a person (an embedding app's backend
 * takes control for its page): the holder is named the way execution leases name theirs. The
 * foreign key to the person goes; a holder who leaves is revoked by the api (audited), not deleted
 * by a cascade that nobody hears of.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("workspace_embed_origins")
    .addColumn("workspace_id", "text", (c) =>
      c.primaryKey().references("organization.id").onDelete("cascade"),
    )
    .addColumn("origins", "jsonb", (c) =>
      c.notNull().defaultTo(sql`'[]'::jsonb`).check(sql`jsonb_typeof(origins) = 'array'`),
    )
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`
    create trigger embed_origins_changed after update on workspace_embed_origins
    for each row when (old.origins is distinct from new.origins)
    execute function announce_access_change('workspace_id')`.execute(db);
  await sql`
    create trigger embed_origins_removed after delete on workspace_embed_origins
    for each row execute function announce_access_change('workspace_id')`.execute(db);

  await db.schema.alterTable("control_leases").dropConstraint("control_leases_holder_user_id_fkey").execute();
  await db.schema.alterTable("control_leases").renameColumn("holder_user_id", "holder_id").execute();
  await db.schema
    .alterTable("control_leases")
    .addColumn("holder_type", "text", (c) =>
      c.notNull().defaultTo("user").check(sql`holder_type in ('user', 'api_key')`),
    )
    .execute();
  await db.schema
    .alterTable("control_leases")
    .alterColumn("holder_type", (c) => c.dropDefault())
    .execute();
}
