import type { DatabaseHandle } from "@cubicle/db";
import { sql } from "kysely";
import { lockKeyOf } from "../housekeeping/periodic-job.ts";
import { SharedExclusiveLock, type StoreLock } from "./store/lock.ts";

/**
 * The checkpoint store's lock across api replicas, which share CHECKPOINT_DIR (docs/architecture.md,
 * "Scale"). Writes of revisions hold it shared and garbage collection exclusively, from the first
 * object a write stores or decides to reuse until its manifest names them, so a sweep on any
 * replica never deletes an object that a write in flight counts on.
 *
 * Why a lock and not a grace period with reused objects touched: a sweep's "unreferenced and old"
 * check and its unlink are two steps, and a writer's "exists" check and its touch are two more; on
 * a shared file system no order of those four closes the gap, and mtimes compare clocks of
 * different machines. A Postgres advisory lock (pg_advisory_lock_shared / pg_advisory_lock) is
 * the readers–writer lock the replicas already share, and a replica that dies releases it with its
 * connection.
 *
 * Each replica holds the shared lock on one reserved connection while any of its writes runs
 * (however many), so concurrent checkpoints do not use up the pool; its own writes and sweeps are
 * ordered by the in-process lock first, so a replica never waits on itself in Postgres.
 * Embedded PGlite belongs to one process: the in-process lock is the whole answer there.
 */
export function replicaStoreLock(database: DatabaseHandle): StoreLock {
  const local = new SharedExclusiveLock();
  if (database.dialect === "pglite") return local;
  const key = lockKeyOf("checkpoint-store");
  let holders = 0;
  let held: Promise<() => Promise<void>> | null = null;

  /** Takes the advisory lock on a reserved connection; resolves to its release. */
  const hold = (mode: "shared" | "exclusive"): Promise<() => Promise<void>> =>
    new Promise((acquired, failed) => {
      let release!: () => void;
      const released = new Promise<void>((done) => {
        release = done;
      });
      const session = database.db.connection().execute(async (connection) => {
        if (mode === "shared") await sql`select pg_advisory_lock_shared(${key})`.execute(connection);
        else await sql`select pg_advisory_lock(${key})`.execute(connection);
        try {
          acquired(async () => {
            release();
            // an unlock that fails means the connection went, and the lock with it
            await session.catch(() => undefined);
          });
          await released;
        } finally {
          if (mode === "shared") await sql`select pg_advisory_unlock_shared(${key})`.execute(connection);
          else await sql`select pg_advisory_unlock(${key})`.execute(connection);
        }
      });
      session.catch(failed);
    });

  return {
    shared: (work) =>
      local.shared(async () => {
        holders += 1;
        if (holders === 1) held = hold("shared");
        const mine = held as Promise<() => Promise<void>>;
        try {
          await mine;
          return await work();
        } finally {
          holders -= 1;
          if (holders === 0) {
            held = null;
            await mine.then(
              (release) => release(),
              () => undefined,
            );
          }
        }
      }),
    exclusive: (work) =>
      local.exclusive(async () => {
        const release = await hold("exclusive");
        try {
          return await work();
        } finally {
          await release();
        }
      }),
  };
}
