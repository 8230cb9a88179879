export { type DatabaseHandle, type DatabaseLocation, type DialectName, openDatabase } from "./connect.ts";
export { migrateToLatest, migrations } from "./migrate.ts";
export * from "./schema.ts";
