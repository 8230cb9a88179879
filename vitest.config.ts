import { defineConfig } from "vitest/config";

/** The shared conformance and fault suites, run against every backend. */
const providerSuites = "providers/testing/backends/*.test.ts";

/**
 * One run covers everything: unit tests, the API and database suites on both database dialects
 * (embedded PGlite and a real Postgres started for the run), the shared provider suites against
 * every backend, end-to-end checks, and the reliability suite (faults, load, hostile input).
 *
 * Most of the unit and api suites wait on a database or a process, not on the CPU, so they run two
 * files at a time; then the provider suites and the end-to-end journeys run one file at a time
 * (each drives real desktops, and two at once on this machine's two cores slowed Daytona's
 * export and import cases past their budget).
 */
const twoAtATime = { maxWorkers: 2, sequence: { groupOrder: 0 } };
const oneAtATime = (groupOrder: number) => ({ maxWorkers: 1, sequence: { groupOrder } });
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          ...twoAtATime,
          include: [
            "{db,api,proxy,supervisor,config,providers}/src/**/*.test.ts",
            "providers/testing/fake/**/*.test.ts",
            "scripts/**/*.test.ts",
            "emulators/src/**/*.test.ts",
          ],
        },
      },
      {
        extends: true,
        test: {
          name: "pglite",
          ...twoAtATime,
          include: ["{db,api}/test/**/*.test.ts"],
          // *.postgres.test.ts: suites about several processes on one database server, and heavy
          // suites on vendors' emulated sandboxes; *.docker.test.ts: suites about real Docker
          // computers (their browsers and archives, not the SQL, are what they test). Each runs
          // once, on the production dialect; every other api suite runs on both.
          exclude: ["**/*.postgres.test.ts", "**/*.docker.test.ts"],
          env: { CUBICLE_TEST_DB: "pglite" },
        },
      },
      {
        extends: true,
        test: {
          name: "postgres",
          ...twoAtATime,
          include: ["{db,api}/test/**/*.test.ts"],
          env: { CUBICLE_TEST_DB: "postgres" },
          globalSetup: ["db/src/testing/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: { name: "providers", ...oneAtATime(1), include: [providerSuites] },
      },
      {
        extends: true,
        test: { name: "e2e", ...oneAtATime(2), include: ["e2e/test/**/*.test.ts"] },
      },
      {
        // faults, load and hostile input (`npm run reliability` runs the same files and prints the report)
        extends: true,
        test: {
          name: "reliability",
          ...oneAtATime(3),
          include: ["reliability/test/**/*.test.ts"],
          // the production dialect: faults and load are about the real database server's behaviour
          env: { CUBICLE_TEST_DB: "postgres" },
          globalSetup: ["db/src/testing/global-setup.ts"],
        },
      },
    ],
  },
});
