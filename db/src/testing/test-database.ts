import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { type DatabaseHandle, openDatabase } from "../connect.ts";
import { createEmptyDatabase } from "./temporary-postgres.ts";

/**
 * An empty database of the dialect this Vitest project runs (CUBICLE_TEST_DB): an in-memory
 * PGlite, or a fresh database on the run's temporary Postgres server.
 */
export async function openTestDatabase(): Promise<DatabaseHandle> {
  if (process.env.CUBICLE_TEST_DB === "postgres") {
    const name = `t_${randomBytes(6).toString("hex")}`;
    return openDatabase({ databaseUrl: await createEmptyDatabase(inject("postgresUrl"), name) });
  }
  return openDatabase({ pgliteInMemory: true });
}
