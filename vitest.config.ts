import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { TEST_PLAN } from "./scripts/lib/test-plan.mjs";

/**
 * The projects of scripts/lib/test-plan.mjs, which says what each one needs and why it runs where
 * it does. `npm test` runs them in two stages:
 *
 * 1. Two Vitest processes at once, each running one file at a time: the lane of the suites that
 *    drive many real computers for minutes each (every backend's shared suites, then the end-to-end
 *    journeys), which must never run beside each other, and the lane of everything else (unit and
 *    api tests on PGlite, then on Postgres, the Docker and vendor suites, the hostile input, the
 *    client's users of one deployment). Most files wait on a computer, a vendor's polling or a
 *    browser, so a heavy file and a light one share the two cores well; two heavy ones did not.
 * 2. Alone, one file at a time: the files that change the host's network, then the reliability
 *    suite's faults and load, which measure the machine.
 *
 * Here every project runs one file at a time, in the plan's order (the sequencer below), so a bare
 * `npx vitest run` keeps every rule and is only slower.
 */
const ORDER = new Map(TEST_PLAN.map((project, index) => [project.name, index]));

/** The plan's order, then each project's files by path. */
class PlanSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => ORDER.get(file.project.name) ?? ORDER.size;
    return [...files].sort((a, b) => rank(a) - rank(b) || a.moduleId.localeCompare(b.moduleId));
  }
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 1,
    sequence: { sequencer: PlanSequencer },
    projects: TEST_PLAN.map(({ name, include, env, globalSetup }) => ({
      extends: true,
      test: {
        name,
        include,
        maxWorkers: 1,
        ...(env ? { env } : {}),
        ...(globalSetup ? { globalSetup } : {}),
      },
    })),
  },
});
