import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, sql } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import { PostgresJSDialect } from "kysely-postgres-js";
import postgres from "postgres";
import type { Database } from "./schema.ts";

export type DialectName = "pglite" | "postgres";

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: DialectName;
  /** True when a trivial query answers; used by health checks. */
  ping(): Promise<boolean>;
  /**
   * Calls `onPayload` for every notification on `channel` (sent with `select pg_notify(channel,
   * payload)`, so inside a transaction it arrives only on commit, at every process listening).
   * Resolves once listening; the returned function stops it. `onResubscribed` is called when a
   * lost listening connection was re-established: notifications sent meanwhile are gone.
   */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    onResubscribed?: () => void,
  ): Promise<Unlisten>;
  /**
   * Runs `work` only if no other process holds the advisory lock `key` (a session-level lock on a
   * connection reserved for the duration), and says whether it ran. This is how several api
   * replicas agree that exactly one of them does a periodic job.
   */
  ifLockFree(key: number, work: () => Promise<void>): Promise<boolean>;
  close(): Promise<void>;
}

export type Unlisten = () => Promise<void>;
type Listen = DatabaseHandle["listen"];
type IfLockFree = DatabaseHandle["ifLockFree"];

export type DatabaseLocation =
  /** A Postgres server reached with postgres.js. */
  | { databaseUrl: string }
  /** Embedded PGlite storing its files in this directory. */
  | { pgliteDirectory: string }
  /** Embedded PGlite kept in memory (tests). */
  | { pgliteInMemory: true };

const INT8_OID = 20;
const CLOSE_TIMEOUT_SECONDS = 5;

/**
 * The one way to open Cubicle's database. Both dialects parse int8 as a JS number so that
 * the schema types hold on either (fences and audit ids stay far below 2^53).
 */
export async function openDatabase(location: DatabaseLocation): Promise<DatabaseHandle> {
  if ("databaseUrl" in location) {
    const client = postgres(location.databaseUrl, {
      max: 10,
      onnotice: () => {},
      types: {
        int8: { to: INT8_OID, from: [INT8_OID], serialize: (value: number) => String(value), parse: Number },
      },
    });
    const db = new Kysely<Database>({ dialect: new PostgresJSDialect({ postgres: client }) });
    // postgres.js listens on one dedicated connection and listens again after it reconnects.
    const listen: Listen = async (channel, onPayload, onResubscribed) => {
      let active = true;
      let listened = 0;
      const { unlisten } = await client.listen(
        checkChannel(channel),
        (payload) => active && onPayload(payload),
        () => active && listened++ > 0 && onResubscribed?.(),
      );
      return once(async () => {
        // After a reconnect postgres.js registers the listener anew and this unlisten no longer
        // finds it, so the flag is what really stops delivery.
        active = false;
        await unlisten();
      });
    };
    const ifLockFree: IfLockFree = async (key, work) => {
      const connection = await client.reserve();
      try {
        const [row] = await connection`select pg_try_advisory_lock(${key}) as locked`;
        if (!row?.locked) return false;
        try {
          await work();
        } finally {
          await connection`select pg_advisory_unlock(${key})`;
        }
        return true;
      } finally {
        connection.release();
      }
    };
    // Kysely's destroy() waits without limit for the pool; a bounded end() cannot hang a shutdown.
    return handle(db, "postgres", listen, ifLockFree, () => client.end({ timeout: CLOSE_TIMEOUT_SECONDS }));
  }
  let pglite: PGlite;
  if ("pgliteDirectory" in location) {
    mkdirSync(location.pgliteDirectory, { recursive: true });
    pglite = await PGlite.create(location.pgliteDirectory, { parsers: { [INT8_OID]: Number } });
  } else {
    pglite = await PGlite.create({ parsers: { [INT8_OID]: Number } });
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  // PGlite is one session that Kysely hands out exclusively; LISTEN runs while holding it, or it
  // could land inside (and be rolled back with) another caller's open transaction.
  const exclusively = <T>(run: () => Promise<T>) => db.connection().execute(run);
  const listen: Listen = async (channel, onPayload) => {
    const stop = await exclusively(() => pglite.listen(checkChannel(channel), onPayload));
    return once(async () => {
      if (!pglite.closed) await exclusively(() => stop());
    });
  };
  // An embedded database belongs to one process (PGlite locks its files), so the only contenders
  // are this process's own callers; a flag serves them, and work keeps the whole pool to itself.
  const held = new Set<number>();
  const ifLockFree: IfLockFree = async (key, work) => {
    if (held.has(key)) return false;
    held.add(key);
    try {
      await work();
      return true;
    } finally {
      held.delete(key);
    }
  };
  return handle(db, "pglite", listen, ifLockFree, () => db.destroy());
}

/** Channel names reach LISTEN unquoted on PGlite, so only plain lowercase identifiers pass. */
function checkChannel(channel: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new RangeError(`not a channel name: ${channel}`);
  return channel;
}

function once(run: () => Promise<void>): Unlisten {
  let done: Promise<void> | undefined;
  return () => {
    done ??= run();
    return done;
  };
}

function handle(
  db: Kysely<Database>,
  dialect: DialectName,
  listen: Listen,
  ifLockFree: IfLockFree,
  close: () => Promise<void>,
): DatabaseHandle {
  return {
    db,
    dialect,
    listen,
    ifLockFree,
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close,
  };
}
