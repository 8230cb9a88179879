import type { Reporter, TestModule } from "vitest/node";
import type { CaseCounts, Family } from "./tally.ts";

interface FamilyRow {
  cases: number;
  failed: number;
  tried: number;
  refused: number;
  lost: number;
  ms: number;
}

const emptyRow = (): FamilyRow => ({ cases: 0, failed: 0, tried: 0, refused: 0, lost: 0, ms: 0 });
const addRow = (a: FamilyRow, b: FamilyRow): FamilyRow => ({
  cases: a.cases + b.cases,
  failed: a.failed + b.failed,
  tried: a.tried + b.tried,
  refused: a.refused + b.refused,
  lost: a.lost + b.lost,
  ms: a.ms + b.ms,
});

/**
 * `npm run reliability`'s summary: per family, the cases run, the inputs or faults tried, how many
 * were refused as designed, anything lost (must be 0) and the time taken. The cases are the same
 * ones `npm test` runs; this reporter only reads what each case recorded with `tally`.
 */
export default class ReliabilityReport implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const rows = new Map<Family, FamilyRow>();
    for (const module of testModules) {
      for (const testCase of module.children.allTests()) {
        const counts: CaseCounts | undefined = testCase.meta().reliability;
        if (!counts) continue;
        const row = addRow(rows.get(counts.family) ?? emptyRow(), {
          cases: 1,
          failed: testCase.result().state === "failed" ? 1 : 0,
          tried: counts.tried,
          refused: counts.refused,
          lost: counts.lost,
          ms: testCase.diagnostic()?.duration ?? 0,
        });
        rows.set(counts.family, row);
      }
    }
    const total = [...rows.values()].reduce(addRow, emptyRow());
    const cells = (name: string, row: FamilyRow) => [
      name,
      ...[row.cases, row.failed, row.tried, row.refused, row.lost].map(String),
      `${(row.ms / 1000).toFixed(1)} s`,
    ];
    const header = ["family", "cases", "failed", "tried", "refused as designed", "lost", "time"];
    const lines = [...rows.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([family, row]) => cells(family, row));
    lines.push(cells("all", total));
    const widths = header.map((title, column) =>
      Math.max(title.length, ...lines.map((line) => line[column]?.length ?? 0)),
    );
    const format = (cells: string[]) =>
      cells
        .map((cell, column) =>
          column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
        )
        .join("  ");
    process.stdout.write(
      `\nReliability report\n${format(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}\n${lines.map(format).join("\n")}\n` +
        `${total.lost === 0 && total.failed === 0 ? "nothing lost" : `LOST ${total.lost}, FAILED ${total.failed}`}\n`,
    );
  }
}
