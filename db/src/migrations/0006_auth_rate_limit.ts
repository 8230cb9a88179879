import type { Kysely } from "kysely";

/**
 * Better Auth's rate-limit counters (its `rateLimit` model, camelCase like the other Better Auth
 * tables of 0001): one row per client address and auth path, shared by every api replica, so a
 * limit is one limit however many replicas answer.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("rateLimit")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("key", "text", (c) => c.notNull().unique())
    .addColumn("count", "integer", (c) => c.notNull())
    // Milliseconds since the epoch, as Better Auth writes them.
    .addColumn("lastRequest", "bigint", (c) => c.notNull())
    .execute();
  // Better Auth prunes rows whose window has passed.
  await db.schema.createIndex("rateLimit_lastRequest_idx").on("rateLimit").column("lastRequest").execute();
}
