/**
 * `npm run bench:api`: the api's latency under a steady 300 requests a second of what automations
 * do all day: reads (computers, sessions, the audit trail), session heartbeats and tool calls.
 *
 * The api runs as production starts it (its own process, api/src/main.ts, logging at info) on a
 * real Postgres server started for the run, with the `fake` provider: reads and heartbeats never
 * reach a provider, and a tool call on the fake one costs the api's own work (authentication,
 * fence check, audit record, answer) without a Docker exec in the way, so the numbers are the
 * api's. Screenshots are left out: the fake draws and deflates a 1280x800 PNG in the api's own
 * process for each (about 6 ms of its CPU in a profile), work a real computer does in its own
 * container, so they would measure the fake. The load is open-loop (bench/api/load.ts): latency counts from when each request was
 * due, so queueing in the api is counted. After a warm-up (JIT, the pool's connections), every
 * request of BENCH_API_SECONDS is measured.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ApiProcess, startApiProcess } from "@cubicle/api/testing/api-process";
import { startTemporaryPostgres, type TemporaryPostgres } from "@cubicle/db/testing";
import { onAbort } from "../abort.ts";
import { printProfileSummary } from "../profile.ts";
import { percentile } from "../proxy/measure.ts";
import { envInteger, printMeasures, printTable } from "../report.ts";
import { cpuSeconds, postgresServerPids } from "./cpu.ts";
import { type Kind, type KindResult, runOpenLoop } from "./load.ts";
import { type BenchWorkspace, furnishWorkspace, NOTES_FILE } from "./workspace.ts";

const RATE = envInteger("BENCH_API_RATE", 300, 1, 5_000);
const SECONDS = envInteger("BENCH_API_SECONDS", 30, 1, 3_600);
const WARM_UP_SECONDS = envInteger("BENCH_API_WARM_UP_S", 5, 0, 600);
const PRIVATE_BOTS = envInteger("BENCH_API_PRIVATE_BOTS", 4, 0, 100);
const TEAM_BOTS = envInteger("BENCH_API_TEAM_BOTS", 4, 0, 8);
const DEADLINE_MS = envInteger("BENCH_API_DEADLINE_S", 300, 10, 7_200) * 1000;
/** BENCH_API_CPU_PROF=1: the api runs under `node --cpu-prof`, summarised once it exits. */
const PROFILE = envInteger("BENCH_API_CPU_PROF", 0, 0, 1) === 1;
const TARGET_MS = 20;

type Group = "read" | "heartbeat" | "tool call";

/** The mix, per 20 requests: 11 reads, 5 heartbeats, 4 tool calls. */
function mix(w: BenchWorkspace): (Kind & { group: Group })[] {
  const base = `/v1/workspaces/${w.workspaceId}`;
  const key = { "x-api-key": w.apiKey };
  const session = (i: number) => w.sessions[i % w.sessions.length] as (typeof w.sessions)[number];
  const ofSession = (i: number, method: string, rest: string, body?: unknown) => {
    const s = session(i);
    return {
      method,
      path: w.holder.pathOf(s, rest),
      headers: { ...key, "x-session-fence": String(s.fence) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    };
  };
  const get = (path: string) => ({ method: "GET", path, headers: key });
  return [
    { group: "read", name: "list computers", weight: 3, call: () => get(`${base}/computers`) },
    {
      group: "read",
      name: "get a computer",
      weight: 3,
      call: (i) => get(`${base}/computers/${w.computerIds[i % w.computerIds.length]}`),
    },
    { group: "read", name: "list open sessions", weight: 3, call: () => get(`${base}/sessions`) },
    {
      group: "read",
      name: "audit page (50 newest)",
      weight: 2,
      call: () => get(`${base}/audit-events?limit=50`),
    },
    {
      group: "heartbeat",
      name: "session heartbeat",
      weight: 5,
      call: (i) => ofSession(i, "POST", "/heartbeat"),
    },
    {
      group: "tool call",
      name: "read a file",
      weight: 2,
      call: (i) => ofSession(i, "GET", `/files/content?path=${NOTES_FILE}`),
    },
    {
      group: "tool call",
      name: "shell: echo",
      weight: 2,
      call: (i) => ofSession(i, "POST", "/shell", { command: `echo ${i}` }),
    },
  ];
}

const ms = (value: number) => (Number.isNaN(value) ? "—" : `${value.toFixed(1)} ms`);
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const errorsOf = (result: KindResult) =>
  [...result.statuses].filter(([status]) => status !== "200" && status !== "201");

let postgres: TemporaryPostgres | undefined;
let api: ApiProcess | undefined;
const profileDir = PROFILE ? mkdtempSync(join(tmpdir(), "cubicle-bench-api-prof-")) : undefined;
const stopLoad = new AbortController();
const cleanUp = async () => {
  stopLoad.abort();
  // An api still working through a backlog of requests may take long to close; it holds nothing.
  const killed = setTimeout(() => void api?.kill("SIGKILL"), 5_000);
  await api?.close();
  clearTimeout(killed);
  await postgres?.stop();
};
const abort = onAbort("bench:api", DEADLINE_MS, cleanUp);

try {
  postgres = await startTemporaryPostgres();
  api = await startApiProcess(
    {
      NODE_ENV: "test", // the fake provider refuses production
      HOST: "127.0.0.1",
      DATABASE_URL: postgres.url,
      BETTER_AUTH_SECRET: randomBytes(32).toString("base64url"),
      ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
      SCREEN_CAPABILITY_KEY: randomBytes(32).toString("base64url"),
      SANDBOX_PROVIDER: "fake",
    },
    { nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [] },
  );
  const workspace = await furnishWorkspace(api.client(), api.client(), {
    private: PRIVATE_BOTS,
    team: TEAM_BOTS,
  });
  const kinds = mix(workspace);
  const weights = kinds.reduce((sum, kind) => sum + kind.weight, 0);
  console.log(
    `bench:api — ${RATE} requests/s open-loop for ${SECONDS} s after ${WARM_UP_SECONDS} s of warm-up; ` +
      `api (own process, fake provider) on Postgres; ${workspace.computerIds.length} computers, ` +
      `${workspace.sessions.length} open sessions, one admin API key.`,
  );
  if (WARM_UP_SECONDS > 0)
    await runOpenLoop(api.url, kinds, { rate: RATE, seconds: WARM_UP_SECONDS, signal: stopLoad.signal });

  const databasePids = postgresServerPids(Number(new URL(postgres.url).port));
  const loadBefore = loadAverage();
  const cpuBefore = {
    api: cpuSeconds([api.pid]),
    database: cpuSeconds(databasePids),
    own: process.cpuUsage(),
  };
  const load = await runOpenLoop(api.url, kinds, { rate: RATE, seconds: SECONDS, signal: stopLoad.signal });
  if (stopLoad.signal.aborted) throw new Error("the load was stopped");
  const share = (seconds: number) => `${((100 * seconds) / (load.elapsedMs / 1000)).toFixed(0)} %`;
  const ownCpu = process.cpuUsage(cpuBefore.own);
  const apiSeconds = cpuSeconds([api.pid]) - cpuBefore.api;
  const answered = load.kinds.reduce((sum, result) => sum + result.latencies.length, 0);
  const cpu = {
    api: share(apiSeconds),
    apiPerRequest: ms((1000 * apiSeconds) / answered),
    database: share(cpuSeconds(databasePids) - cpuBefore.database),
    generator: share((ownCpu.user + ownCpu.system) / 1e6),
  };

  console.log("");
  printTable([
    ["kind", "share", "answered", "p50", "p99", "max", "errors"],
    ...kinds.map((kind, k) => {
      const result = load.kinds[k] as KindResult;
      const errors = errorsOf(result);
      return [
        kind.name,
        `${((100 * kind.weight) / weights).toFixed(0)} %`,
        String(result.latencies.length),
        ms(percentile(result.latencies, 0.5)),
        ms(percentile(result.latencies, 0.99)),
        ms(Math.max(...result.latencies)),
        errors.length === 0 ? "0" : errors.map(([status, n]) => `${n} x ${status}`).join(", "),
      ];
    }),
  ]);
  console.log(
    `\nachieved ${load.achievedRate.toFixed(1)} answers/s of ${RATE} sent/s; generator at most ` +
      `${ms(load.maxSendLagMs)} behind its schedule. CPU (of one core) over the run: api ${cpu.api} (${cpu.apiPerRequest} a request), ` +
      `Postgres ${cpu.database}, this generator ${cpu.generator}. Load average ${loadBefore} before, ` +
      `${loadAverage()} after.`,
  );

  const inGroups = (groups: Group[]) =>
    kinds.flatMap((kind, k) => (groups.includes(kind.group) ? [load.kinds[k] as KindResult] : []));
  const targeted = inGroups(["read", "heartbeat"]);
  const worst = targeted.reduce((a, b) =>
    percentile(a.latencies, 0.99) >= percentile(b.latencies, 0.99) ? a : b,
  );
  const worstP99 = percentile(worst.latencies, 0.99);
  const tools = inGroups(["tool call"]).flatMap((result) => result.latencies);
  const unexpected = load.kinds.filter((result) => errorsOf(result).length > 0);
  printMeasures([
    {
      measure: `API p99 at ${RATE} requests/s, reads and heartbeats`,
      reference: "—",
      result: `${ms(worstP99)} (${worst.name})`,
      ratio: "—",
      target: `<= ${TARGET_MS} ms`,
      met: worstP99 <= TARGET_MS,
    },
    {
      measure: `API p50 / p99 at ${RATE} requests/s, tool calls (fake provider)`,
      reference: "—",
      result: `${ms(percentile(tools, 0.5))} / ${ms(percentile(tools, 0.99))}`,
      ratio: "—",
      target: "reported",
      met: undefined,
    },
  ]);
  // Every call of the mix answers 200 when the api is well: anything else means it was not measured.
  if (unexpected.length > 0) {
    process.exitCode = 1;
    console.error(`bench:api: unexpected answers from ${unexpected.map((result) => result.name).join(", ")}`);
  }
} catch (error) {
  process.exitCode = 1;
  if (!abort.aborting)
    console.error(`bench:api failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
} finally {
  await cleanUp();
}
if (profileDir) {
  await printProfileSummary("api", profileDir, 25);
  console.log(`(kept: ${profileDir})`);
}
// Keep-alive sockets and timers of a failed step must not keep the run alive.
process.exit();
