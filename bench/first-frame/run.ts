/**
 * `npm run bench:first-frame`: how long a person waits for the first frame of a computer, on
 * Docker: one that did not exist, and one the idle job suspended. Measured: a bot's session opened
 * through the api (a real api on PGlite, a real supervisor on the Docker engine, which makes or
 * starts the computer's container), a view capability minted, the screen opened through the real
 * proxy and its first FramebufferUpdate read. The new computer's reference, in the same run:
 * `docker run` of the same computer image until its VNC server answers (its RFB banner on the
 * published port). The resume's target is absolute. The three take turns, BENCH_FIRST_FRAME_RUNS
 * times each; medians are compared. Each session's open is split into the supervisor calls the api
 * made (timed from the api's side) and the api's own work.
 */
import "./test-env.ts";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { SYSTEM_ACTOR } from "@cubicle/api/audit";
import { stopComputer } from "@cubicle/api/computers/lifecycle";
import { destroyMachines } from "@cubicle/api/testing/computers";
import { expectStatus, startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import { openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { findFreePort } from "@cubicle/db/testing";
import { vncAnswers } from "@cubicle/host/testing/vnc";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { onAbort } from "../abort.ts";
import { envInteger, printMeasures, printTable, times } from "../report.ts";
import { ALL_STEPS, type Call, OTHER, recordSupervisorCalls, stepsBetween } from "./supervisor-calls.ts";

const RUNS = envInteger("BENCH_FIRST_FRAME_RUNS", 2, 1, 20);
const DEADLINE_MS = envInteger("BENCH_FIRST_FRAME_DEADLINE_S", 600, 10, 7_200) * 1000;
/**
 * The computer image both paths run: the supervisor's default (supervisor/src/config.ts) unless
 * SUPERVISOR_IMAGE names another.
 */
const IMAGE = process.env.SUPERVISOR_IMAGE ?? "cubicle-computer:latest";

const run = promisify(execFile);
const containers = new Set<string>();
let cleanUp: () => Promise<void> = async () => {};

onAbort("bench:first-frame", DEADLINE_MS, () => cleanUp());

/** Milliseconds from `docker run` of the image to its screen 0's VNC server answering. */
async function dockerRunUntilVnc(): Promise<number> {
  const started = performance.now();
  const { stdout } = await run("docker", ["run", "-d", "--rm", "-p", "127.0.0.1::6080", IMAGE]);
  const id = stdout.trim();
  containers.add(id);
  const mapped = (await run("docker", ["port", id, "6080/tcp"])).stdout.trim();
  const port = Number(mapped.split(":").at(-1));
  // Docker's proxy takes the connection at once and drops it until x11vnc listens behind it.
  while (!(await vncAnswers(port))) await sleep(25);
  const elapsed = performance.now() - started;
  await run("docker", ["rm", "-f", id]);
  containers.delete(id);
  return elapsed;
}

/** A new Private bot, whose first session makes its computer. */
async function newBot(world: World): Promise<string> {
  const bot = expectStatus(
    await world.people.owner.post(`/v1/workspaces/${world.workspaceId}/bots`, {
      name: `bench ${randomBytes(4).toString("hex")}`,
      charter: {
        purpose: "benchmarks",
        boundary: "stays in the bench",
        privacyReason: "a computer of its own",
      },
      computerMode: "private",
    }),
    201,
  ).json as { id: string };
  return bot.id;
}

interface Opened {
  sessionId: string;
  computerId: string;
  fence: number;
}

/**
 * Milliseconds from the api call that opens the bot's session to its screen's first frame, and
 * when (from the same start) the session was open and the capability minted; and the session.
 */
async function apiUntilFirstFrame(world: World, proxy: RunningProxy, botId: string) {
  const owner = world.people.owner;
  const workspace = `/v1/workspaces/${world.workspaceId}`;
  const started = performance.now();
  const session = expectStatus(await owner.post(`${workspace}/bots/${botId}/sessions`), 201)
    .json as Opened & {
    screen: number | null;
  };
  const openedAt = performance.now();
  const capability = expectStatus(
    await owner.post(
      `${workspace}/computers/${session.computerId}/screens/${session.screen ?? 0}/capabilities`,
      {
        mode: "view",
      },
    ),
    201,
  ).json as { token: string };
  const minted = performance.now() - started;
  const screen = await openScreenSocket(`http://127.0.0.1:${proxy.port}`, capability.token);
  screen.rfb.requestUpdate();
  await screen.rfb.readUpdate();
  const firstFrame = performance.now() - started;
  screen.ws.close();
  const supervisor = stepsBetween(calls, started, openedAt);
  return { steps: { opened: openedAt - started, minted, firstFrame, supervisor }, session };
}

/** Ends the session and suspends its computer as the idle job does (the same lifecycle call). */
async function suspend(world: World, t: TestApi, botId: string, session: Opened): Promise<void> {
  expectStatus(
    await world.people.owner.post(
      `/v1/workspaces/${world.workspaceId}/bots/${botId}/sessions/${session.sessionId}/end`,
      { outcome: "success" },
      { headers: { "x-session-fence": String(session.fence) } },
    ),
    200,
  );
  const computer = await t.database.db
    .selectFrom("computers")
    .selectAll()
    .where("id", "=", session.computerId)
    .executeTakeFirstOrThrow();
  const suspended = await stopComputer(t.api.deps, computer, SYSTEM_ACTOR, "idle");
  if (suspended.state !== "suspended") throw new Error(`the computer is ${suspended.state}, not suspended`);
}

interface Steps {
  opened: number;
  minted: number;
  firstFrame: number;
  supervisor: ReturnType<typeof stepsBetween>;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

let calls: Call[] = [];
let supervisor: TestSupervisor | undefined;
let t: TestApi | undefined;
let proxy: RunningProxy | undefined;
cleanUp = async () => {
  if (t) await destroyMachines(t);
  await proxy?.close();
  await t?.close();
  await supervisor?.close();
  for (const id of containers) await run("docker", ["rm", "-f", id]).catch(() => undefined);
};

try {
  supervisor = await startTestSupervisor({ env: { SUPERVISOR_IMAGE: IMAGE } });
  calls = recordSupervisorCalls(supervisor.url);
  const key = randomBytes(32).toString("base64url");
  const proxyPort = String(await findFreePort());
  t = await startTestApi({
    SANDBOX_PROVIDER: "docker",
    SANDBOX_SUPERVISOR_URL: supervisor.url,
    SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
    DATA_DIR: supervisor.dataDir,
    SCREEN_CAPABILITY_KEY: key,
    PROXY_PUBLIC_URL: `ws://127.0.0.1:${proxyPort}`,
  });
  proxy = await startProxy(
    parseProxyConfig({
      SCREEN_CAPABILITY_KEY: key,
      PROXY_PORT: proxyPort,
      CUBICLE_API_URL: t.api.url,
      LOG_LEVEL: "silent",
    }),
  );
  const world = await buildWorld(t, "bench");
  console.log(
    `bench:first-frame — image ${IMAGE}, ${RUNS} run(s) each, taking turns; api on PGlite, supervisor and proxy in this process.`,
  );

  const reference: number[] = [];
  const fresh: Steps[] = [];
  const resumed: Steps[] = [];
  for (let i = 0; i < RUNS; i++) {
    reference.push(await dockerRunUntilVnc());
    const botId = await newBot(world);
    const made = await apiUntilFirstFrame(world, proxy, botId);
    fresh.push(made.steps);
    await suspend(world, t, botId, made.session);
    const resume = await apiUntilFirstFrame(world, proxy, botId);
    resumed.push(resume.steps);
    // suspended again, so that no computer left running weighs on the next runs
    await suspend(world, t, botId, resume.session);
  }
  const row = (name: string, values: number[]) => [name, ...values.map(seconds), seconds(median(values))];
  const split = (path: string, steps: Steps[]) => [
    row(
      `${path}: session open`,
      steps.map((step) => step.opened),
    ),
    ...ALL_STEPS.map((name) => {
      const of = (step: Steps) => step.supervisor.get(name) ?? { ms: 0, calls: 0 };
      const counts = [...new Set(steps.map((step) => of(step).calls))].join("/");
      return row(
        `  supervisor: ${name} (${counts} calls)`,
        steps.map((step) => of(step).ms),
      );
    }),
    row(
      "  the api's own work",
      steps.map(
        (step) =>
          step.opened -
          [...step.supervisor].reduce((sum, [name, s]) => (name === OTHER ? sum : sum + s.ms), 0),
      ),
    ),
    row(
      `${path}: view capability minted`,
      steps.map((step) => step.minted),
    ),
    row(
      `${path}: first frame through the proxy`,
      steps.map((step) => step.firstFrame),
    ),
  ];
  console.log("");
  printTable([
    [
      "path (times from its start; supervisor steps are durations)",
      ...reference.map((_, i) => `run ${i + 1}`),
      "median",
    ],
    row("docker run: VNC answers", reference),
    ...split("new computer", fresh),
    ...split("resume", resumed),
  ]);
  const freshFrame = median(fresh.map((step) => step.firstFrame));
  const resumeFrame = median(resumed.map((step) => step.firstFrame));
  printMeasures([
    {
      measure: "API call -> first frame of a new Docker computer",
      reference: `docker run until VNC answers ${seconds(median(reference))}`,
      result: seconds(freshFrame),
      ratio: times(freshFrame, median(reference)),
      target: "<= 1.5x",
      met: freshFrame <= 1.5 * median(reference),
    },
    {
      measure: "resume of a suspended computer -> first frame",
      reference: "—",
      result: seconds(resumeFrame),
      ratio: "—",
      target: "<= 1 s",
      met: resumeFrame <= 1000,
    },
  ]);
} catch (error) {
  process.exitCode = 1;
  console.error(
    `bench:first-frame failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`,
  );
} finally {
  await cleanUp();
}
// Sockets a failed step left half-open must not keep the run alive.
process.exit();
