import type { Database, DatabaseHandle } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";

/**
 * The replay guard of screen capabilities, shared by every proxy replica: true only the first
 * time any of them presents a token id.
 */
export async function redeem(db: Kysely<Database>, jti: string, expiresAt: Date): Promise<boolean> {
  const inserted = await db
    .insertInto("capability_redemptions")
    .values({ jti, expires_at: expiresAt })
    .onConflict((conflict) => conflict.column("jti").doNothing())
    .returning("jti")
    .executeTakeFirst();
  return inserted !== undefined;
}

/** Drops rows no proxy can need: their tokens expired (with a margin for clock skew between hosts). */
async function pruneRedemptions(db: Kysely<Database>): Promise<void> {
  await db
    .deleteFrom("capability_redemptions")
    .where("expires_at", "<", sql<Date>`now() - interval '5 minutes'`)
    .execute();
}

/** Redemption rows only matter for a minute; pruning them now and then is plenty. */
export function redemptionPruneJob(deps: { database: DatabaseHandle }): PeriodicJob {
  return {
    name: "capability-redemption-prune",
    everyMs: 60_000,
    run: () => pruneRedemptions(deps.database.db),
  };
}
