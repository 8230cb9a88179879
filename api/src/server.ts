import { setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type DatabaseHandle, migrateToLatest, openDatabase } from "@cubicle/db";
import { CapabilityKeyring } from "@cubicle/proxy/capability";
import { serve } from "@hono/node-server";
import { createApp } from "./app.ts";
import { AuditLog } from "./audit/audit-log.ts";
import { createAuth } from "./auth/auth.ts";
import { Checkpoints } from "./checkpoints/checkpoints.ts";
import { replicaStoreLock } from "./checkpoints/replica-lock.ts";
import { checkpointRetryJob } from "./checkpoints/retries.ts";
import { createCheckpointSealing, createFileCheckpointStore } from "./checkpoints/store/index.ts";
import { idleSuspensionJob } from "./computers/idle-suspension.ts";
import { reconciliationJob } from "./computers/reconciliation.ts";
import type { ApiEnv } from "./config/env.ts";
import { resolveSecrets } from "./config/secrets.ts";
import type { AppDeps } from "./context.ts";
import { createCredentialCipher } from "./credentials/cipher.ts";
import { egressRefusalJob } from "./egress/refusals.ts";
import { beginEpochIfRestored } from "./events/epochs.ts";
import { startPeriodicJob } from "./housekeeping/periodic-job.ts";
import { answerClientErrors } from "./http/client-errors.ts";
import { redemptionPruneJob } from "./internal/redemptions.ts";
import { createLogger, type DestinationStream } from "./observability/logger.ts";
import { createMetrics } from "./observability/metrics.ts";
import {
  createRecordingStore,
  Recordings,
  recordingHousekeepingJob,
  SessionRecorders,
  sessionRecordingJob,
} from "./recordings/index.ts";
import { Sandbox } from "./sandbox/sandbox.ts";
import { controlExpiryJob } from "./screens/control-expiry.ts";
import { controlPasswords } from "./screens/control-password.ts";
import { sessionExpiryJob } from "./sessions/expiry.ts";

export const API_VERSION: string = JSON.parse(
  readFileSync(new URL("../package.json", import.meta.url), "utf8"),
).version;

export interface RunningApi {
  /** e.g. http://127.0.0.1:3100 */
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

/**
 * Start the API: secrets, database (migrated), services, HTTP listener. `database` lets a test
 * hand in its own handle; otherwise DATABASE_URL or embedded PGlite under DATA_DIR is used.
 * `logDestination` takes the log lines instead of stdout (a test that reads them).
 */
export async function startApi(
  env: ApiEnv,
  options: { database?: DatabaseHandle; logDestination?: DestinationStream } = {},
): Promise<RunningApi> {
  const secrets = resolveSecrets(env);
  const logger = createLogger(env.logLevel, options.logDestination);
  const database =
    options.database ??
    (await openDatabase(
      env.databaseUrl ? { databaseUrl: env.databaseUrl } : { pgliteDirectory: join(env.dataDir, "pglite") },
    ));
  const migrated = await migrateToLatest(database.db);
  // replicas starting together share one migration (the migrator's lock): one says what it applied
  const applied = (migrated.results ?? []).map((result) => result.migrationName);
  if (applied.length > 0) logger.info({ applied }, "database migrated");
  else logger.info("database schema up to date");
  // before any stream starts: positions must be of the epoch of this server's transaction ids
  await beginEpochIfRestored(database.db, logger);

  const audit = new AuditLog(database.db);
  const encryptionKeys = { current: secrets.encryptionKey, previous: secrets.previousEncryptionKeys };
  const sandbox = new Sandbox(env, secrets.supervisorToken, database.db, logger);
  await sandbox.start();
  const checkpoints = new Checkpoints(
    { database, audit, logger, sandbox },
    createFileCheckpointStore(env.checkpoints.dir, {
      sealing: createCheckpointSealing(encryptionKeys),
      lock: replicaStoreLock(database),
    }),
    { keepLast: env.checkpoints.keepLast, keepDailyForDays: env.checkpoints.keepDailyForDays },
  );
  const recordings = new Recordings(
    { db: database.db, logger },
    createRecordingStore(env.recordings.dir, encryptionKeys),
  );
  const capabilities = new CapabilityKeyring({
    current: secrets.screenCapabilityKey,
    previous: secrets.previousScreenCapabilityKeys,
  });
  const sessionRecorders = new SessionRecorders({ database, sandbox, capabilities, audit, env, logger });
  const stopping = new AbortController();
  // Every open lease stream (one per proxy replica) listens on it; that is not a leak.
  setMaxListeners(0, stopping.signal);
  const deps: AppDeps = {
    env,
    database,
    audit,
    auth: createAuth({ db: database.db, env, secret: secrets.betterAuthSecret, audit, logger }),
    cipher: createCredentialCipher(encryptionKeys),
    logger,
    metrics: createMetrics(),
    sandbox,
    checkpoints,
    recordings,
    capabilities,
    sessionRecorders,
    controlPassword: controlPasswords(secrets.screenCapabilityKey),
    stopping: stopping.signal,
    version: API_VERSION,
  };
  const app = createApp(deps);

  const server = serve({ fetch: app.fetch, hostname: env.host, port: env.port });
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${env.host.includes(":") ? `[${env.host}]` : env.host}:${port}`;
  logger.info({ url, db: database.dialect, version: API_VERSION }, "cubicle api listening");
  const jobs = [
    controlExpiryJob(deps),
    sessionExpiryJob(deps),
    idleSuspensionJob(deps),
    reconciliationJob(deps),
    egressRefusalJob(deps),
    redemptionPruneJob(deps),
    checkpointRetryJob(deps),
    recordingHousekeepingJob(deps),
    sessionRecordingJob(deps),
  ].map((job) => startPeriodicJob(deps, job));

  return {
    url,
    deps,
    close: async () => {
      // Event streams end first: the server only finishes closing once every response has.
      stopping.abort();
      await Promise.all(jobs.map((job) => job.stop()));
      await sessionRecorders.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await checkpoints.drain();
      await recordings.exports.drain();
      await sandbox.shutdown();
      if (!options.database) await database.close();
    },
  };
}
