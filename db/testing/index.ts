export {
  createEmptyDatabase,
  findFreePort,
  startTemporaryPostgres,
  type TemporaryPostgres,
} from "./temporary-postgres.ts";
export { createTestDatabaseUrl, openTestDatabase } from "./test-database.ts";

declare module "vitest" {
  /** Set by global-setup.ts for the run's temporary Postgres server. */
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
