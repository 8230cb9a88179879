export { createEmptyDatabase, startTemporaryPostgres, type TemporaryPostgres } from "./temporary-postgres.ts";
