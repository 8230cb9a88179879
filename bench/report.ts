/**
 * How every benchmark reports: plain tables, and one row per measure of issue 21's targets with the
 * reference measured in the same run, the ratio and whether the target was met. A missed target is
 * news, not an error: benches exit non-zero only when they could not measure.
 */
import { appendFileSync } from "node:fs";

/** Columns padded to their widest cell: the first `textColumns` left-aligned, the rest right-aligned. */
export function printTable(rows: readonly (readonly string[])[], textColumns = 1): void {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0)));
  for (const row of rows)
    console.log(
      row
        .map((cell, column) =>
          column < textColumns ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
        )
        .join("  ")
        .trimEnd(),
    );
}

export const times = (value: number, base: number) => `${(value / base).toFixed(2)}x`;

export interface MeasureRow {
  measure: string;
  /** What the result is compared with, measured in the same run ("—" when the target is absolute). */
  reference: string;
  result: string;
  /** result / reference, when there is a reference. */
  ratio: string;
  target: string;
  /** Undefined when the measure has no target. */
  met: boolean | undefined;
}

const MEASURE_HEADER = ["measure", "reference", "result", "ratio", "target", "met?"] as const;

const metCell = (met: boolean | undefined) => (met === undefined ? "—" : met ? "yes" : "NO");

/**
 * Prints the rows as a table. When `npm run bench` runs the bench it sets BENCH_RESULTS_FILE, and
 * the rows are also appended there (one JSON object a line) for its summary of every bench.
 */
export function printMeasures(rows: readonly MeasureRow[]): void {
  console.log("");
  printMeasureTable(rows);
  const file = process.env.BENCH_RESULTS_FILE;
  if (file) appendFileSync(file, rows.map((row) => `${JSON.stringify(row)}\n`).join(""));
}

export function printMeasureTable(rows: readonly MeasureRow[]): void {
  printTable([
    MEASURE_HEADER,
    ...rows.map((row) => [row.measure, row.reference, row.result, row.ratio, row.target, metCell(row.met)]),
  ]);
}

/** A whole number from the environment, within bounds, or the default; exits with a message otherwise. */
export function envInteger(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
    process.exit(1);
  }
  return value;
}
