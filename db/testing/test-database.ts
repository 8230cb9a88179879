import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { type DatabaseHandle, openDatabase } from "../src/connect.ts";
import { createEmptyDatabase } from "./temporary-postgres.ts";

/**
 * An empty database of the dialect this Vitest project runs (CUBICLE_TEST_DB): an in-memory
 * PGlite, or a fresh database on the run's temporary Postgres server.
 */
export async function openTestDatabase(): Promise<DatabaseHandle> {
  if (process.env.CUBICLE_TEST_DB === "postgres")
    return openDatabase({ databaseUrl: await createTestDatabaseUrl() });
  return openDatabase({ pgliteInMemory: true });
}

/**
 * A fresh database on the run's temporary Postgres server, for suites that open it more than once
 * (several api replicas on one database); only in the `postgres` project.
 */
export function createTestDatabaseUrl(): Promise<string> {
  if (process.env.CUBICLE_TEST_DB !== "postgres")
    throw new Error("only the postgres project has a Postgres server");
  return createEmptyDatabase(inject("postgresUrl"), `t_${randomBytes(6).toString("hex")}`);
}
