// A Vitest reporter that writes each test file's time (start to end, and its project) and its
// tests' results as JSON to
// the file named by CUBICLE_TEST_TIMES, for the report `npm test` prints at its end
// (scripts/lib/times.mjs). It prints nothing itself.
import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

interface FileTime {
  file: string;
  project: string;
  /** When the file started and ended, ms since the epoch: a project's wall time spans them. */
  start: number;
  end: number;
  /** The file's own time: its set-up, import, hooks and tests. */
  ms: number;
  /** Its tests by result; a file that failed to load counts as one failed test. */
  passed: number;
  failed: number;
  skipped: number;
}

export default class FileTimesReporter implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly times: FileTime[] = [];

  onTestModuleStart(module: TestModule): void {
    // a module starts after it was collected: its collection time is counted back from here
    this.started.set(module.id, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const end = Date.now();
    const { environmentSetupDuration, prepareDuration, collectDuration, setupDuration, duration } =
      module.diagnostic();
    const ms = environmentSetupDuration + prepareDuration + collectDuration + setupDuration + duration;
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const test of module.children.allTests()) {
      const { state } = test.result();
      counts[state === "passed" || state === "failed" ? state : "skipped"] += 1;
    }
    if (module.state() === "failed" && counts.failed === 0) counts.failed = 1;
    this.times.push({
      file: relative(process.cwd(), module.moduleId),
      project: module.project.name,
      start: Math.min(this.started.get(module.id) ?? end, end - ms),
      end,
      ms,
      ...counts,
    });
  }

  onTestRunEnd(): void {
    const target = process.env.CUBICLE_TEST_TIMES;
    if (target) writeFileSync(target, JSON.stringify(this.times));
  }
}
