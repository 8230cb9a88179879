import { defineConfig } from "vitest/config";

/** The shared conformance and fault suites, run against every backend. */
const providerSuites = "providers/testing/backends/*.test.ts";

/**
 * One run covers everything: unit tests, the API and database suites on both database dialects
 * (embedded PGlite and a real Postgres started for the run), the shared provider suites against
 * every backend, and end-to-end checks.
 *
 * Most of the run waits on machines (Docker, emulated vendors, polls), not on the CPU, so the
 * suites run in three groups one after the other: the unit and api suites two files at a time,
 * then the provider suites two at a time, then the end-to-end journeys one at a time (their real
 * Chromium and their sub-second revocation checks want the machine to themselves).
 */
const twoAtATime = (groupOrder: number) => ({ maxWorkers: 2, sequence: { groupOrder } });
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          ...twoAtATime(0),
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
          ...twoAtATime(0),
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
          ...twoAtATime(0),
          include: ["{db,api}/test/**/*.test.ts"],
          env: { CUBICLE_TEST_DB: "postgres" },
          globalSetup: ["db/src/testing/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: { name: "providers", ...twoAtATime(1), include: [providerSuites] },
      },
      {
        extends: true,
        test: { name: "e2e", maxWorkers: 1, sequence: { groupOrder: 2 }, include: ["e2e/test/**/*.test.ts"] },
      },
    ],
  },
});
