/**
 * `npm run bench [-- --full]`: every benchmark, one after another, each in its own process, at the
 * short default size (under ten minutes in all on a 2-core machine) or the full one; then one table
 * of every measure in issue 21. A size set in the environment (BENCH_SOCKETS=…) wins over both.
 * Exits non-zero only when a bench could not measure, never on a missed target.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type MeasureRow, printMeasureTable } from "./report.ts";

type Size = Record<string, string>;

const BENCHES: { name: string; script: string; short: Size; full: Size }[] = [
  {
    name: "proxy",
    script: "proxy/run.ts",
    short: { BENCH_SOCKETS: "50", BENCH_PROXY_SECONDS: "4", BENCH_PROXY_ROUND_TRIPS: "300" },
    full: {
      BENCH_SOCKETS: "1000",
      BENCH_PROXY_SECONDS: "20",
      BENCH_PROXY_ROUND_TRIPS: "2000",
      BENCH_PROXY_DEADLINE_S: "900",
    },
  },
  {
    name: "checkpoint",
    script: "checkpoint/run.ts",
    short: { BENCH_CHECKPOINT_MB: "200", BENCH_CHECKPOINT_FILES: "5000" },
    full: {
      BENCH_CHECKPOINT_MB: "500",
      BENCH_CHECKPOINT_FILES: "10000",
      BENCH_CHECKPOINT_DEADLINE_S: "1800",
    },
  },
  {
    name: "screen",
    script: "screen/run.ts",
    short: { BENCH_SCREEN_SECONDS: "5", BENCH_SCREEN_VIEWERS: "50", BENCH_SCREEN_ANSWERS: "4" },
    full: {
      BENCH_SCREEN_SECONDS: "20",
      BENCH_SCREEN_VIEWERS: "50",
      BENCH_SCREEN_ANSWERS: "10",
      BENCH_SCREEN_DEADLINE_S: "900",
    },
  },
  {
    name: "api",
    script: "api/run.ts",
    short: { BENCH_API_SECONDS: "30" },
    full: { BENCH_API_SECONDS: "120", BENCH_API_DEADLINE_S: "900" },
  },
  {
    name: "first-frame",
    script: "first-frame/run.ts",
    short: { BENCH_FIRST_FRAME_RUNS: "2" },
    full: { BENCH_FIRST_FRAME_RUNS: "5", BENCH_FIRST_FRAME_DEADLINE_S: "1200" },
  },
];

const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== "--full");
if (unknown.length > 0) {
  console.error(`npm run bench: unknown argument ${unknown.join(" ")}; the only one is --full`);
  process.exit(2);
}
const size = args.includes("--full") ? "full" : "short";

const work = mkdtempSync(join(tmpdir(), "cubicle-bench-"));
const resultsFile = join(work, "results.jsonl");
let running: ReturnType<typeof spawn> | undefined;
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.once(signal, () => {
    // Each bench stops its own children on a signal; a second one here would be the default (exit).
    running?.kill(signal);
    process.exitCode = 1;
  });

function runBench(script: string, env: Size): Promise<number | null> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL(script, import.meta.url))],
    {
      env: { ...env, ...process.env, BENCH_RESULTS_FILE: resultsFile },
      stdio: "inherit",
    },
  );
  running = child;
  return new Promise((resolve) => {
    child.once("error", () => resolve(null));
    child.once("close", (code) => resolve(code));
  });
}

const started = performance.now();
const failed: string[] = [];
for (const bench of BENCHES) {
  console.log(`\n=== bench:${bench.name} (${size} size) ===\n`);
  const code = await runBench(bench.script, bench[size]);
  if (code !== 0) failed.push(`bench:${bench.name} (exit ${code})`);
  if (process.exitCode) break;
}

const rows: MeasureRow[] = readFileSync(resultsFile, { encoding: "utf8", flag: "a+" })
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line) as MeasureRow);
rmSync(work, { recursive: true, force: true });
console.log(
  `\n=== every measure (${size} size, ${((performance.now() - started) / 60_000).toFixed(1)} min) ===\n`,
);
printMeasureTable(rows);
if (failed.length > 0) {
  console.error(`\nfailed to measure: ${failed.join(", ")}`);
  process.exitCode = 1;
}
