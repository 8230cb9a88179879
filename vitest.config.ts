import { defineConfig } from "vitest/config";

/** The shared conformance and fault suites, run against every backend. */
const providerSuites = "providers/testing/backends/*.test.ts";
/**
 * Suites that mostly wait rather than compute: Box's adapter waits on Box's clock (a state or a
 * command's output asked for again and again, up to a second apart), and the desktop backend's
 * import cases wait out Chromium's cookie commit (BROWSER_SETTLE_MS, twice: 62 s of its 79).
 */
const waitingSuites = [
  "providers/testing/backends/box-emulator.test.ts",
  "providers/testing/backends/desktop.test.ts",
];

/**
 * One run covers everything: unit tests, the API and database suites on both database dialects
 * (embedded PGlite and a real Postgres started for the run), the shared provider suites against
 * every backend, end-to-end checks, and the reliability suite (faults, load, hostile input).
 *
 * Most of the unit and api suites, the Box and desktop provider suites and the reliability suite's
 * hostile input wait on a database, a process, a vendor's polling or a browser, not on the CPU, so
 * they run two files at a time; then the other provider suites run one file at a time (each
 * drives real desktops, and two at once on this machine's two cores slowed Daytona's export and
 * import cases past their budget); then the client suites, two at a time by themselves; then the
 * end-to-end journeys one at a time, and last the reliability suite's faults and load, alone,
 * since what they measure is the machine's behaviour.
 */
/**
 * Files that change the host's network (network namespaces and routes for stand-in hosts at fixed
 * addresses, firewall rules of computers and emulated machines) and assert what a machine can
 * reach: two with stand-ins at the same fixed addresses cannot run at once, and `ip netns` briefly
 * shows other processes' mounts that a starting supervisor's DATA_DIR check reads, so they run
 * alone, one at a time, between the two-at-a-time files and the provider suites.
 */
const networkSuites = [
  "supervisor/src/egress.docker.test.ts",
  "emulators/src/machines/firewall.docker.test.ts",
  "emulators/src/e2b/e2b-emulator.test.ts",
  "emulators/src/daytona/daytona-emulator.test.ts",
];
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
            "{db,api,proxy,supervisor,config,providers,client,viewer,host}/src/**/*.test.ts",
            "providers/testing/fake/**/*.test.ts",
            "scripts/**/*.test.ts",
            "emulators/src/**/*.test.ts",
          ],
          exclude: networkSuites,
        },
      },
      {
        extends: true,
        test: { name: "network", ...oneAtATime(1), include: networkSuites },
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
          globalSetup: ["db/testing/global-setup.ts"],
        },
      },
      {
        extends: true,
        test: { name: "providers-waiting", ...twoAtATime, include: waitingSuites },
      },
      {
        // the client library, the CLI and the MCP server: users of one deployment (real api,
        // supervisor and Docker desktops) that the project's setup starts once for all of them;
        // after the provider suites, by themselves: beside the first group's files, their desktops
        // and CLI processes slowed the Box emulator's stop past its wait
        extends: true,
        test: {
          name: "client",
          maxWorkers: 2,
          sequence: { groupOrder: 3 },
          include: ["client/test/**/*.test.ts"],
          globalSetup: ["client/testing/deployment.ts"],
        },
      },
      {
        extends: true,
        test: { name: "providers", ...oneAtATime(2), include: [providerSuites], exclude: waitingSuites },
      },
      {
        extends: true,
        test: { name: "e2e", ...oneAtATime(4), include: ["e2e/test/**/*.test.ts"] },
      },
      {
        // faults and load (`npm run reliability` runs these and the hostile input's files, and prints the report)
        extends: true,
        test: {
          name: "reliability",
          ...oneAtATime(5),
          include: ["reliability/test/{faults,load}/**/*.test.ts"],
          // the production dialect: faults and load are about the real database server's behaviour
          env: { CUBICLE_TEST_DB: "postgres" },
          globalSetup: ["db/testing/global-setup.ts"],
        },
      },
      {
        // hostile input: answers to what a bot or a browser may send, which no other file's load changes
        extends: true,
        test: {
          name: "reliability-hostile",
          ...twoAtATime,
          include: ["reliability/test/hostile/**/*.test.ts"],
          env: { CUBICLE_TEST_DB: "postgres" },
          globalSetup: ["db/testing/global-setup.ts"],
        },
      },
    ],
  },
});
