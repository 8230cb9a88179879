import type { Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";

/** Every row of every table of the database, keyed `table/id`, as JSON. */
export type Rows = Map<string, string>;

export async function snapshotRows(db: Kysely<Database>): Promise<Rows> {
  const tables = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE'
      and table_name not like 'kysely_migration%'`.execute(db);
  const rows: Rows = new Map();
  for (const { name } of tables.rows) {
    const result = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(db);
    for (const row of result.rows) {
      const body = JSON.stringify(row);
      rows.set(`${name}/${typeof row.id === "string" || typeof row.id === "number" ? row.id : body}`, body);
    }
  }
  return rows;
}

/** A difference between two snapshots that the case expects: a refusal that is itself recorded. */
export type Expected = (key: string, before: unknown, after: unknown) => boolean;

/**
 * What appeared, vanished or changed between two snapshots, as `lost` takes it, leaving out the
 * differences `expected` explains.
 */
export function changedRows(before: Rows, after: Rows, expected: Expected = () => false): string[] {
  const changes: string[] = [];
  const parse = (text: string | undefined) => (text === undefined ? undefined : JSON.parse(text));
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const [was, is] = [before.get(key), after.get(key)];
    if (was === is || expected(key, parse(was), parse(is))) continue;
    const state = was === undefined ? "appeared" : is === undefined ? "vanished" : "changed";
    changes.push(`${key} ${state}: ${(is ?? was ?? "").slice(0, 200)}`);
  }
  return changes;
}

/** Refusals the audit log records by design: a rejected API key, a failed sign-up or sign-in. */
const REFUSAL_ACTIONS = new Set(["api_key.rejected", "auth.sign_up_failed", "auth.sign_in_failed"]);

/** The one difference a refused request may leave: the audit log's record of the refusal. */
export const refusalRecorded: Expected = (key, before, after) =>
  key.startsWith("audit_events/") &&
  before === undefined &&
  REFUSAL_ACTIONS.has((after as { action?: string } | undefined)?.action ?? "");
