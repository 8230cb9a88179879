import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
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
  return openDatabase({ pgliteInMemory: true, dataDir: await emptyPgliteCluster() });
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

/**
 * PGlite's data directory as its initdb leaves it, dumped once per PGlite version on this machine
 * and loaded by every test database after: initdb costs each one 2–3 s of CPU, loading the dump a
 * few hundred ms. The dump is the same empty cluster initdb makes, so each database still starts
 * empty and is migrated by its user. Written whole under a temporary name and renamed, so test
 * files starting at once never read half of one.
 */
async function emptyPgliteCluster(): Promise<Blob> {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const manifest = join(dirname(entry), "..", "package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  const file = join(homedir(), ".cache", "cubicle", `pglite-${version}-initdb.tar.gz`);
  if (!existsSync(file)) {
    const pglite = await PGlite.create();
    const dump = await pglite.dumpDataDir("gzip");
    await pglite.close();
    mkdirSync(dirname(file), { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    renameSync(partial, file);
  }
  return new Blob([readFileSync(file)]);
}
