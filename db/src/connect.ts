import { mkdirSync } from "node:fs";
import { setTimeout as delay } from "node:timers/promises";
import { PGlite } from "@electric-sql/pglite";
import { Kysely, PostgresDialect, sql } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import pg from "pg";
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
  /** A Postgres server reached with node-postgres. */
  | { databaseUrl: string }
  /** Embedded PGlite storing its files in this directory. */
  | { pgliteDirectory: string }
  /**
   * Embedded PGlite kept in memory (tests), started from `dataDir` when given: a data directory
   * PGlite dumped (`dumpDataDir`), which spares the seconds its initdb takes.
   */
  | { pgliteInMemory: true; dataDir?: Blob };

const INT8_OID = 20;
const CLOSE_TIMEOUT_MS = 5_000;
/** A request fails (503) rather than waits while the server is away. */
const CONNECT_TIMEOUT_MS = 5_000;
const FIRST_RELISTEN_DELAY_MS = 100;
const LAST_RELISTEN_DELAY_MS = 5_000;

/**
 * The one way to open Cubicle's database. Both dialects parse int8 as a JS number so that
 * the schema types hold on either (fences and audit ids stay far below 2^53).
 */
export async function openDatabase(location: DatabaseLocation): Promise<DatabaseHandle> {
  if ("databaseUrl" in location) {
    const config: pg.ClientConfig = {
      connectionString: location.databaseUrl,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      types: { getTypeParser: parseInt8AsNumber },
    };
    const pool = new pg.Pool({ ...config, max: 10 });
    // A connection the server cuts emits "error" on its client, or on the pool while idle; with no
    // listener that would kill the process. The query using it (if any) fails on its own, and the
    // pool drops a client that is no longer queryable when it is released.
    pool.on("error", ignore);
    pool.on("connect", (client) => client.on("error", ignore));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const listener = dedicatedListener(config);
    const ifLockFree: IfLockFree = async (key, work) => {
      const client = await pool.connect();
      // A session whose unlock did not answer may still hold the lock: it is destroyed, not reused.
      let sound = false;
      try {
        const { rows } = await client.query<{ locked: boolean }>(
          "select pg_try_advisory_lock($1) as locked",
          [key],
        );
        if (!rows[0]?.locked) {
          sound = true;
          return false;
        }
        try {
          await work();
        } finally {
          await client.query("select pg_advisory_unlock($1)", [key]);
          sound = true;
        }
        return true;
      } finally {
        client.release(!sound);
      }
    };
    // pool.end() waits without limit for connections still checked out; those are ended when
    // released, and a shutdown does not wait for them.
    const close = () =>
      Promise.race([
        Promise.all([pool.end(), listener.close()]).then(() => {}),
        delay(CLOSE_TIMEOUT_MS, undefined, { ref: false }),
      ]);
    return handle(db, "postgres", listener.listen, ifLockFree, close);
  }
  let pglite: PGlite;
  if ("pgliteDirectory" in location) {
    mkdirSync(location.pgliteDirectory, { recursive: true });
    pglite = await PGlite.create(location.pgliteDirectory, { parsers: { [INT8_OID]: Number } });
  } else {
    pglite = await PGlite.create({
      parsers: { [INT8_OID]: Number },
      ...(location.dataDir ? { loadDataDir: location.dataDir } : {}),
    });
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

/** Per connection, so that the process-wide parsers other code may rely on stay as they are. */
const parseInt8AsNumber = ((oid: number, format?: "text" | "binary") =>
  oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser;

function ignore() {}

interface Subscriber {
  onPayload(payload: string): void;
  onResubscribed?: () => void;
  /** Its connection was lost and notifications went missing until the next one listens. */
  missed: boolean;
}

/**
 * One connection carries every LISTEN. node-postgres does not reconnect a client, so this does,
 * with backoff, listens again on every channel, and tells the subscribers that something was
 * missed. A listen() while the server is away fails after the connect timeout.
 */
function dedicatedListener(config: pg.ClientConfig): { listen: Listen; close(): Promise<void> } {
  const subscribers = new Map<string, Set<Subscriber>>();
  /** The connection listening on every channel, or the attempt at one; undefined when neither. */
  let connection: Promise<pg.Client> | undefined;
  let closed = false;

  const connect = async (onLost: () => void) => {
    const client = new pg.Client(config);
    // a failure is seen by connect(), by the query, or as the "end" that follows every loss
    client.on("error", ignore);
    client.on("notification", ({ channel, payload }) => {
      for (const subscriber of subscribers.get(channel) ?? []) subscriber.onPayload(payload ?? "");
    });
    try {
      await client.connect();
      for (const channel of subscribers.keys()) await client.query(`listen ${channel}`);
    } catch (error) {
      client.end().catch(ignore);
      throw error;
    }
    client.once("end", onLost);
    for (const set of subscribers.values()) {
      for (const subscriber of set) {
        if (!subscriber.missed) continue;
        subscriber.missed = false;
        subscriber.onResubscribed?.();
      }
    }
    return client;
  };
  const open = () => {
    const attempt: Promise<pg.Client> = connect(() => {
      if (closed || connection !== attempt) return;
      connection = undefined;
      for (const set of subscribers.values()) for (const subscriber of set) subscriber.missed = true;
      void relisten();
    });
    connection = attempt;
    attempt.catch(() => {
      if (connection === attempt) connection = undefined;
    });
    return attempt;
  };
  const relisten = async () => {
    for (let wait = FIRST_RELISTEN_DELAY_MS; !closed; wait = Math.min(wait * 2, LAST_RELISTEN_DELAY_MS)) {
      await delay(wait, undefined, { ref: false });
      if (closed) return;
      try {
        await (connection ?? open());
        return;
      } catch {
        // the server is still away: wait longer before the next attempt
      }
    }
  };

  const listen: Listen = async (channel, onPayload, onResubscribed) => {
    checkChannel(channel);
    const subscriber: Subscriber = { onPayload, onResubscribed, missed: false };
    const set = subscribers.get(channel) ?? new Set();
    subscribers.set(channel, set.add(subscriber));
    const forget = () => {
      set.delete(subscriber);
      if (set.size === 0 && subscribers.get(channel) === set) subscribers.delete(channel);
      return set.size === 0;
    };
    try {
      const client = await (connection ?? open());
      // a LISTEN already in place (the connection was opened after this subscribed) is a no-op
      await client.query(`listen ${channel}`);
    } catch (error) {
      forget();
      throw error;
    }
    return once(async () => {
      if (!forget()) return;
      // a lost connection has forgotten the channel already, and the next one will not listen
      const client = await connection?.catch(() => undefined);
      await client?.query(`unlisten ${channel}`).catch(ignore);
    });
  };
  const close = async () => {
    closed = true;
    const client = await connection?.catch(() => undefined);
    await client?.end();
  };
  return { listen, close };
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
