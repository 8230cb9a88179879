/**
 * Faults under a recording: the proxy killed while it records a bot's session, and the recording
 * store's disk filled while it records a control socket. Either way the recording is marked
 * incomplete and keeps what it had (it replays up to the fault), and nothing live is lost: the
 * control socket goes on relaying the screen, and once the proxy is back the session's screen is
 * recorded again.
 *
 * The small disk is a tmpfs mount the test makes (it runs as root) and always unmounts.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { destroyMachines } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi, TRUSTED_ORIGIN } from "@cubicle/api/testing/harness";
import { memberRobot, setRecordingMode, startRecordingApi } from "@cubicle/api/testing/recorded-stack";
import { openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { createBot, type OpenedSession, type SessionClient, sleep } from "@cubicle/api/testing/sessions";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { RECORDING_FILE_MAGIC, RecordKind, RecordReader } from "@cubicle/proxy/recording";
import { PNG } from "pngjs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ProxyProcess, startProxyProcess } from "../../src/proxy-process.ts";
import { tally } from "../../src/tally.ts";

const MiB = 1024 * 1024;
let t: TestApi;
let proxy: ProxyProcess;
let proxyEnv: Record<string, string>;
let w: World;
let robot: SessionClient;
const disk = mkdtempSync(join(tmpdir(), "cubicle-recording-disk-"));
let mounted = false;

beforeAll(async () => {
  mkdirSync(disk, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", disk]);
  mounted = true;
  const stack = await startRecordingApi({ RECORDING_DIR: join(disk, "recordings") });
  t = stack.t;
  proxyEnv = stack.proxyEnv;
  proxy = await startProxyProcess(proxyEnv, { port: stack.proxyPort });
  w = await buildWorld(t, "recording-faults");
  robot = await memberRobot(t, w, "faulted robot");
}, 120_000);

afterAll(async () => {
  try {
    await proxy?.close();
    if (t) {
      await destroyMachines(t);
      await t.close();
    }
  } finally {
    if (mounted) {
      try {
        execFileSync("umount", [disk], { stdio: "ignore" });
      } catch {
        execFileSync("umount", ["-l", disk], { stdio: "ignore" });
      }
    }
    rmSync(disk, { recursive: true, force: true });
  }
});

const recordingsPath = () => `/v1/workspaces/${w.workspaceId}/recordings`;

type RecordingRow = {
  id: string;
  status: string;
  incompleteReason: string | null;
  durationMs: number;
  bytes: number;
};
const recordingOf = async (id: string): Promise<RecordingRow> =>
  expectStatus(await w.people.admin.get(`${recordingsPath()}/${id}`), 200).json;
const recordingsWhere = async (query: string): Promise<RecordingRow[]> =>
  expectStatus(await w.people.admin.get(`${recordingsPath()}?${query}`), 200).json.items;

/** The average colour of a PNG, as [r, g, b]. */
function averageColour(png: Buffer): number[] {
  const image = PNG.sync.read(png);
  const sum = [0, 0, 0];
  for (let at = 0; at < image.data.length; at += 4)
    for (let channel = 0; channel < 3; channel++)
      sum[channel] = (sum[channel] ?? 0) + (image.data[at + channel] ?? 0);
  return sum.map((value) => Math.round(value / (image.width * image.height)));
}

it("kill the proxy while it records a session: incomplete, replays up to the kill; recorded again once back", async (context) => {
  const faults = tally(context, "faults");
  await setRecordingMode(w, "control-and-sessions");
  const bot = await createBot(w.people.admin, w.workspaceId);
  const session: OpenedSession = await robot.opened(bot.id);
  const title = `killed-${randomUUID()}`;
  const lost: string[] = [];
  try {
    const first = await until(
      "the session's recording to start",
      async () =>
        (await recordingsWhere(`sessionId=${session.sessionId}`)).find((r) => r.status === "recording"),
      30_000,
    );
    // A screen the recording must hold at the kill: a full-screen red window.
    const shown = await robot.shell(session, {
      command: `(xterm -T ${title} -bg '#c00000' -geometry 400x120+0+0 >/dev/null 2>&1 &) ; sleep 2`,
    });
    expect(shown.exit).toMatchObject({ code: 0 });
    const live = Buffer.from(await (await robot.raw(session, "POST", "/observe")).arrayBuffer());
    await sleep(500);

    faults.tried();
    await proxy.kill("SIGKILL");
    const cut = await until(
      "the recording to be marked incomplete",
      async () => {
        const row = await recordingOf(first.id);
        return row.status === "recording" ? undefined : row;
      },
      30_000,
    );
    if (cut.status !== "incomplete") lost.push(`the killed recording is ${cut.status}, not incomplete`);
    else faults.refused();
    expect(cut.incompleteReason).toMatch(/proxy/);

    // What it holds plays: whole records, ending without END, the last frame the red screen.
    const content = await w.people.admin.fetch("GET", `${recordingsPath()}/${first.id}/content`);
    expect(content.status).toBe(200);
    const bytes = new Uint8Array(await content.arrayBuffer());
    expect(new TextDecoder().decode(bytes.subarray(0, RECORDING_FILE_MAGIC.length))).toBe(
      RECORDING_FILE_MAGIC,
    );
    const reader = new RecordReader();
    const records = reader.push(bytes.subarray(RECORDING_FILE_MAGIC.length));
    expect(reader.partialBytes).toBe(0);
    expect(records.filter((r) => r.kind === RecordKind.SERVER).length).toBeGreaterThan(1);
    expect(records.some((r) => r.kind === RecordKind.END && r.complete)).toBe(false);
    const frame = await w.people.admin.fetch(
      "GET",
      `${recordingsPath()}/${first.id}/frame?at=${cut.durationMs}`,
    );
    expect(frame.status).toBe(200);
    const [recorded, seen] = [averageColour(Buffer.from(await frame.arrayBuffer())), averageColour(live)];
    if (recorded.some((value, i) => Math.abs(value - (seen[i] ?? 0)) > 12))
      lost.push(`the recording's last frame averages ${recorded}, the screen at the kill ${seen}`);

    // Back: the session (still open) is recorded again, in a recording of its own.
    proxy = await startProxyProcess(proxyEnv, { port: proxy.port });
    const second = await until(
      "a new recording of the session",
      async () =>
        (await recordingsWhere(`sessionId=${session.sessionId}`)).find(
          (r) => r.status === "recording" && r.id !== first.id,
        ),
      30_000,
    );
    expectStatus(await robot.end(session), 200);
    const ended = await until(
      "the second recording to end",
      async () => {
        const row = await recordingOf(second.id);
        return row.status === "recording" ? undefined : row;
      },
      30_000,
    );
    if (ended.status !== "complete") lost.push(`the session's second recording ended ${ended.status}`);
  } finally {
    await robot.shell(session, { command: `pkill -f ${title} || true` }).catch(() => undefined);
  }
  faults.lost(lost);
}, 180_000);

it("fill the recording store's disk under a control socket: incomplete, and the socket stays live", async (context) => {
  const faults = tally(context, "faults");
  await setRecordingMode(w, "control");
  // the workspace's Team computer, started by a session of its own (not recorded: control only)
  const bot = await createBot(w.people.admin, w.workspaceId);
  const session = await robot.opened(bot.id);
  expectStatus(await robot.end(session), 200);
  const computer = { id: session.computerId };
  const screenPath = `/v1/workspaces/${w.workspaceId}/computers/${computer.id}/screens/${session.screen}`;
  const { member } = w.people;
  expectStatus(await member.post(`${screenPath}/control`), 201);
  const minted = expectStatus(await member.post(`${screenPath}/capabilities`, { mode: "control" }), 201).json;
  expect(minted.recorded).toBe(true);

  // All but 64 KiB of the store's disk taken: the recording's first chunks cannot be written.
  const filler = join(disk, "filler");
  execFileSync("fallocate", ["-l", String(16 * MiB - 64 * 1024 - 4096), filler]);
  const lost: string[] = [];
  try {
    const screen = await openScreenSocket(proxy.url, minted.token, { origin: TRUSTED_ORIGIN });
    faults.tried();
    const failed = await until(
      "the recording to fail on the full disk",
      async () => {
        screen.rfb.requestUpdate({ incremental: false });
        await screen.rfb.readUpdate();
        const [row] = await recordingsWhere(`computerId=${computer.id}`);
        return row && row.status !== "recording" ? row : undefined;
      },
      60_000,
    );
    if (failed.status === "incomplete") faults.refused();
    else lost.push(`the recording on a full disk ended ${failed.status}`);
    expect(failed.incompleteReason).toMatch(/full|space|store/i);

    // The live socket never noticed: it is open and still relays whole updates.
    for (let i = 0; i < 3; i++) {
      screen.rfb.requestUpdate({ incremental: false });
      const rectangles = await screen.rfb.readUpdate();
      if (rectangles.length === 0) lost.push("an update after the failure came back empty");
    }
    if (screen.ws.readyState !== screen.ws.OPEN) lost.push("the control socket closed with the recording");
    screen.ws.close();
  } finally {
    rmSync(filler, { force: true });
  }
  faults.lost(lost);
}, 120_000);
