// Where the test command's time goes: each phase before Vitest (installs, checks, images) and
// each test file (written by scripts/lib/file-times-reporter.ts), printed at the end of `npm test`
// so every change can see what it costs. Plain Node (no dependencies): it runs before `npm ci`.
import { existsSync, readFileSync } from "node:fs";

const phases = [];

/** Runs one phase of the command and keeps how long it took (async phases are awaited). */
export async function phase(name, work) {
  const started = Date.now();
  try {
    return await work();
  } finally {
    phases.push({ name, ms: Date.now() - started });
  }
}

const minutes = (ms) => {
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
};
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`.padStart(8);

/**
 * The report: every phase, Vitest's projects (wall time from their first file's start to their last
 * file's end, and the files' summed time), the `slowest` files, and the tests' results in one line.
 * `fileTimes` are the reporter's JSON files, one per Vitest run; a run that ended before writing
 * one reports none of its files.
 */
export function printTimes(fileTimes, { slowest = 15, since } = {}) {
  const files = fileTimes.flatMap((path) => (existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : []));
  console.log("\nTime");
  for (const { name, ms } of phases) console.log(`  ${minutes(ms)}  ${name}`);
  if (since !== undefined) console.log(`  ${minutes(Date.now() - since)}  the whole command`);
  if (files.length === 0) return;
  const projects = new Map();
  for (const file of files) {
    const project = projects.get(file.project) ?? { start: file.start, end: file.end, sum: 0, count: 0 };
    project.start = Math.min(project.start, file.start);
    project.end = Math.max(project.end, file.end);
    project.sum += file.ms;
    project.count += 1;
    projects.set(file.project, project);
  }
  console.log("\nVitest projects, in the order they started (wall time, and the files' own time summed)");
  for (const [name, project] of [...projects].sort((a, b) => a[1].start - b[1].start)) {
    const wall = minutes(project.end - project.start);
    console.log(
      `  ${name.padEnd(20)} ${wall.padStart(13)}   ${String(project.count).padStart(3)} files ${minutes(project.sum)}`,
    );
  }
  console.log(`\nThe ${slowest} slowest test files`);
  for (const file of [...files].sort((a, b) => b.ms - a.ms).slice(0, slowest)) {
    console.log(`  ${seconds(file.ms)}  ${file.project.padEnd(14)} ${file.file}`);
  }
  const total = (result) => files.reduce((sum, file) => sum + file[result], 0);
  const skipped = total("skipped");
  console.log(
    `\nTests: ${total("passed")} passed, ${total("failed")} failed${skipped ? `, ${skipped} skipped` : ""}`,
  );
}
