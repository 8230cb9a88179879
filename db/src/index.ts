export {
  type DatabaseHandle,
  type DatabaseLocation,
  type DialectName,
  openDatabase,
  type Unlisten,
} from "./connect.ts";
export { migrateToLatest, migrations } from "./migrate.ts";
export * from "./schema.ts";
export { isDatabaseUnavailable } from "./unavailable.ts";
