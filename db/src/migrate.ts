import { type Kysely, type Migration, type MigrationResultSet, Migrator } from "kysely";
import * as accounts from "./migrations/0001_accounts.ts";
import * as domain from "./migrations/0002_domain.ts";
import * as screenCapabilities from "./migrations/0003_screen_capabilities.ts";
import * as checkpoints from "./migrations/0004_checkpoints.ts";
import * as accessChanges from "./migrations/0005_access_changes.ts";
import * as authRateLimit from "./migrations/0006_auth_rate_limit.ts";
import * as egressPolicy from "./migrations/0007_egress_policy.ts";
import * as eventPositions from "./migrations/0008_event_positions.ts";
import * as eventEpochs from "./migrations/0009_event_epochs.ts";
import * as recordings from "./migrations/0010_recordings.ts";
import * as embedding from "./migrations/0011_embedding.ts";

/** Every migration in order. Names are permanent: never rename or edit a landed one. */
export const migrations: Record<string, Migration> = {
  "0001_accounts": accounts,
  "0002_domain": domain,
  "0003_screen_capabilities": screenCapabilities,
  "0004_checkpoints": checkpoints,
  "0005_access_changes": accessChanges,
  "0006_auth_rate_limit": authRateLimit,
  "0007_egress_policy": egressPolicy,
  "0008_event_positions": eventPositions,
  "0009_event_epochs": eventEpochs,
  "0010_recordings": recordings,
  "0011_embedding": embedding,
};

/** Brings the database to the latest schema; running it again changes nothing. */
// biome-ignore lint/suspicious/noExplicitAny: migrations run before, and regardless of, the typed schema.
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: "cubicle_migrations",
    migrationLockTableName: "cubicle_migrations_lock",
  });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`database migration ${failed} failed: ${String(result.error)}`, { cause: result.error });
  }
  return result;
}
