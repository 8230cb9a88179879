/**
 * `npm run bench:first-frame`: how long a person waits for the first frame of a computer that did
 * not exist, on Docker. Measured: a bot's session opened through the api (a real api on PGlite, a
 * real supervisor on the Docker engine, which makes the computer's container), a view capability
 * minted, the screen opened through the real proxy and its first FramebufferUpdate read. Reference,
 * in the same run: `docker run` of the same computer image until its VNC server answers (its RFB
 * banner on the published port). The two take turns, BENCH_FIRST_FRAME_RUNS times each; medians
 * are compared.
 */
import "./test-env.ts";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { findFreePort } from "@cubicle/db/testing";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { vncAnswers } from "@cubicle/supervisor/testing/vnc";
import { destroyMachines } from "../../api/test/support/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "../../api/test/support/harness.ts";
import { openScreenSocket } from "../../api/test/support/screen-socket.ts";
import { buildWorld, type World } from "../../api/test/support/world.ts";
import { onAbort } from "../abort.ts";
import { envInteger, printMeasures, printTable, times } from "../report.ts";

const RUNS = envInteger("BENCH_FIRST_FRAME_RUNS", 2, 1, 20);
const DEADLINE_MS = envInteger("BENCH_FIRST_FRAME_DEADLINE_S", 600, 10, 7_200) * 1000;
/** The computer image the supervisor runs unless told otherwise (supervisor/src/config.ts). */
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

/**
 * Milliseconds from the api call that opens a new Private bot's first session to its screen's first
 * frame, and when (from the same start) the session was open and the capability minted.
 */
async function apiUntilFirstFrame(world: World, proxy: RunningProxy): Promise<Steps> {
  const owner = world.people.owner;
  const workspace = `/v1/workspaces/${world.workspaceId}`;
  const bot = expectStatus(
    await owner.post(`${workspace}/bots`, {
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
  const started = performance.now();
  const session = expectStatus(await owner.post(`${workspace}/bots/${bot.id}/sessions`), 201).json as {
    computerId: string;
    screen: number | null;
  };
  const opened = performance.now() - started;
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
  return { opened, minted, firstFrame };
}

interface Steps {
  opened: number;
  minted: number;
  firstFrame: number;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

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
  supervisor = await startTestSupervisor();
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
  const steps: Steps[] = [];
  for (let i = 0; i < RUNS; i++) {
    reference.push(await dockerRunUntilVnc());
    steps.push(await apiUntilFirstFrame(world, proxy));
  }
  const measured = steps.map((step) => step.firstFrame);
  const row = (name: string, values: number[]) => [name, ...values.map(seconds), seconds(median(values))];
  console.log("");
  printTable([
    ["path (times from its start)", ...reference.map((_, i) => `run ${i + 1}`), "median"],
    row("docker run: VNC answers", reference),
    row(
      "api: session open (computer made)",
      steps.map((step) => step.opened),
    ),
    row(
      "api: view capability minted",
      steps.map((step) => step.minted),
    ),
    row("api: first frame through the proxy", measured),
  ]);
  printMeasures([
    {
      measure: "API call -> first frame of a new Docker computer",
      reference: `docker run until VNC answers ${seconds(median(reference))}`,
      result: seconds(median(measured)),
      ratio: times(median(measured), median(reference)),
      target: "<= 1.5x",
      met: median(measured) <= 1.5 * median(reference),
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
