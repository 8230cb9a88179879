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
  close(): Promise<void>;
}

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
    // Kysely's destroy() waits without limit for the pool; a bounded end() cannot hang a shutdown.
    return handle(db, "postgres", () => client.end({ timeout: CLOSE_TIMEOUT_SECONDS }));
  }
  let pglite: PGlite;
  if ("pgliteDirectory" in location) {
    mkdirSync(location.pgliteDirectory, { recursive: true });
    pglite = await PGlite.create(location.pgliteDirectory, { parsers: { [INT8_OID]: Number } });
  } else {
    pglite = await PGlite.create({ parsers: { [INT8_OID]: Number } });
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return handle(db, "pglite", () => db.destroy());
}

function handle(db: Kysely<Database>, dialect: DialectName, close: () => Promise<void>): DatabaseHandle {
  return {
    db,
    dialect,
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
