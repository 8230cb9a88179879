import { type Kysely, sql } from "kysely";

/**
 * Live screens (docs/architecture.md, "Capabilities and live screens"): the replay guard shared by
 * every proxy replica, and fast lease expiry.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // A capability's token id, recorded the first time a proxy presents it. Rows are only needed
  // until the token itself expires; after that its signature check refuses it anyway.
  await db.schema
    .createTable("capability_redemptions")
    .addColumn("jti", "text", (c) => c.primaryKey())
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("capability_redemptions_by_expiry")
    .on("capability_redemptions")
    .column("expires_at")
    .execute();

  // The expiry loop asks several times a second which live control leases have run out.
  await sql`create index control_leases_live_by_expiry on control_leases (expires_at) where released_at is null`.execute(
    db,
  );
}
