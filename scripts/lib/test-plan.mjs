// The test projects, in the order they run: vitest.config.ts makes its projects from this list and
// `npm test` (scripts/test.mjs) runs its stages and lanes. A project is named by what its tests
// need and selected by folder: a package's `src/**/*.test.ts` need nothing but this machine;
// `<package>/test/postgres/` a real Postgres server, `test/docker/` real Docker computers,
// `test/vendors/` vendors' emulated sandboxes, `test/network/` changes to the host's network.
// Plain Node (no dependencies): test.mjs reads it before Vitest starts.

const POSTGRES = {
  // the production dialect, on one real Postgres server the project's set-up starts and removes
  env: { CUBICLE_TEST_DB: "postgres" },
  globalSetup: ["db/testing/global-setup.ts"],
};

/**
 * Each project: `stage` (stages run one after another), `lane` (the lanes of a stage run at once,
 * each one file at a time, so each of the machine's two cores has one; a stage without lanes runs
 * its projects alone, one file at a time), and why it runs where it does.
 */
export const TEST_PLAN = [
  {
    name: "backends",
    stage: 1,
    lane: "computers",
    // the shared conformance and fault suites against every backend (one entry per backend); each
    // drives real desktops for minutes, and two at once slowed Daytona's export and import past
    // their budget: never beside each other, nor beside the end-to-end journeys. Box first, so that
    // its emulator's stops are over long before the client suites start in the other lane (their
    // desktops and CLI processes once slowed a Box stop past its wait)
    include: ["providers/testing/backends/*.test.ts"],
  },
  {
    name: "e2e",
    stage: 1,
    lane: "computers",
    // journeys through the built dashboard in Chromium and the production Compose stack
    include: ["e2e/test/**/*.test.ts"],
  },
  {
    name: "local",
    stage: 1,
    lane: "services",
    // unit tests (this machine's programs at most: Xvfb, x11vnc, Chromium, ffmpeg) and the api and
    // database suites on the embedded PGlite
    include: [
      "*/src/**/*.test.ts",
      "providers/testing/fake/**/*.test.ts",
      "scripts/*.test.ts",
      "{db,api}/test/*.test.ts",
    ],
    env: { CUBICLE_TEST_DB: "pglite" },
  },
  {
    name: "postgres",
    stage: 1,
    lane: "services",
    // the api and database suites again on Postgres, and those about several processes on one
    // database server
    include: ["{db,api}/test/*.test.ts", "{db,api}/test/postgres/**/*.test.ts"],
    ...POSTGRES,
  },
  {
    name: "docker",
    stage: 1,
    lane: "services",
    // the supervisor and the api on real Docker computers (their browsers and archives, not the SQL)
    include: ["{api,supervisor}/test/docker/**/*.test.ts"],
    ...POSTGRES,
  },
  {
    name: "vendors",
    stage: 1,
    lane: "services",
    // the emulated vendors' sandboxes (real desktops in the local Docker engine) through the
    // unmodified SDKs, the adapters and the api
    include: ["{api,emulators,providers}/test/vendors/**/*.test.ts"],
    ...POSTGRES,
  },
  {
    name: "hostile",
    stage: 1,
    lane: "services",
    // the reliability suite's hostile input: answers to what a bot or a browser may send, which no
    // other file's load changes
    include: ["reliability/test/hostile/**/*.test.ts"],
    ...POSTGRES,
  },
  {
    name: "client",
    stage: 1,
    lane: "services",
    // the client library, the CLI and the MCP server: users of one deployment (real api,
    // supervisor and Docker desktops) that the project's set-up starts once for all of them
    include: ["client/test/**/*.test.ts"],
    globalSetup: ["client/testing/deployment.ts"],
  },
  {
    name: "network",
    stage: 2,
    // network namespaces and routes for stand-in hosts at fixed addresses, firewall rules of
    // computers and emulated machines: two files at once lose their way to the stand-ins, and `ip
    // netns` briefly shows other processes' mounts that a starting supervisor's DATA_DIR check reads
    include: ["{supervisor,emulators}/test/network/**/*.test.ts"],
  },
  {
    name: "reliability",
    stage: 2,
    // faults and load (`npm run reliability` runs these and the hostile input, and prints the
    // report): they measure the machine's behaviour, so nothing else runs beside them
    include: ["reliability/test/{faults,load}/**/*.test.ts"],
    ...POSTGRES,
  },
];

/** The Vitest runs of `npm test`, in order: each a list of runs that go at once, each a list of projects. */
export function testStages() {
  const stages = [...new Set(TEST_PLAN.map((project) => project.stage))].sort((a, b) => a - b);
  return stages.map((stage) => {
    const lanes = new Map();
    for (const project of TEST_PLAN.filter((candidate) => candidate.stage === stage)) {
      const lane = project.lane ?? "alone";
      lanes.set(lane, [...(lanes.get(lane) ?? []), project.name]);
    }
    return [...lanes.values()];
  });
}
