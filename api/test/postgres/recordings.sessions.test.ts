import { randomUUID } from "node:crypto";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
import { PNG } from "pngjs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { destroyMachines } from "../../testing/computers.ts";
import { expectStatus, type TestApi } from "../../testing/harness.ts";
import { memberRobot, setRecordingMode, startRecordingApi } from "../../testing/recorded-stack.ts";
import { createBot, type OpenedSession, type SessionClient, sleep } from "../../testing/sessions.ts";
import { until } from "../../testing/until.ts";
import { buildWorld, type World } from "../../testing/world.ts";

/**
 * A bot's session on a workspace that records sessions, with nobody watching: the api opens the
 * record socket itself, the real proxy records the real screen (the desktop provider's Xvfb and
 * x11vnc), and afterwards the frame decoded at any moment is what `observe` returned then.
 */
let t: TestApi;
let proxy: RunningProxy;
let w: World;
let robot: SessionClient;

beforeAll(async () => {
  const stack = await startRecordingApi();
  t = stack.t;
  proxy = await startProxy(
    parseProxyConfig({ ...stack.proxyEnv, PROXY_PORT: String(stack.proxyPort), LOG_LEVEL: "silent" }),
  );
  w = await buildWorld(t, "session-recordings");
  robot = await memberRobot(t, w, "recorded robot");
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
});

const recordingsPath = () => `/v1/workspaces/${w.workspaceId}/recordings`;

/** The screen's pixels, as RGB triples. */
function pixelsOf(png: Buffer): { width: number; height: number; rgb: (x: number, y: number) => number[] } {
  const image = PNG.sync.read(png);
  return {
    width: image.width,
    height: image.height,
    rgb: (x, y) => {
      const at = (y * image.width + x) * 4;
      return [image.data[at] ?? 0, image.data[at + 1] ?? 0, image.data[at + 2] ?? 0];
    },
  };
}

/** The share of sampled pixels (a grid over the whole screen) that two screenshots agree on. */
function agreement(a: Buffer, b: Buffer): number {
  const [x, y] = [pixelsOf(a), pixelsOf(b)];
  expect([y.width, y.height]).toEqual([x.width, x.height]);
  let same = 0;
  let total = 0;
  for (let row = 4; row < x.height; row += 16) {
    for (let column = 4; column < x.width; column += 16) {
      const [p, q] = [x.rgb(column, row), y.rgb(column, row)];
      total++;
      if (p.every((value, i) => Math.abs(value - (q[i] ?? 0)) <= 8)) same++;
    }
  }
  return same / total;
}

it("records a bot's session with nobody watching; the frame at a moment is what observe showed then", async () => {
  await setRecordingMode(w, "control-and-sessions");
  const bot = await createBot(w.people.admin, w.workspaceId);
  const session: OpenedSession = await robot.opened(bot.id);
  const recording = await until(
    "the session's recording to start",
    async () => {
      const list = expectStatus(
        await w.people.admin.get(`${recordingsPath()}?sessionId=${session.sessionId}`),
        200,
      );
      const live = list.json.items.find((r: { status: string }) => r.status === "recording");
      return live ?? undefined;
    },
    30_000,
  );
  expect(recording).toMatchObject({ kind: "session", sessionId: session.sessionId, botId: bot.id });

  // Three screens in turn, each a full-screen window of its own colour, each observed once settled.
  const title = `recorded-${randomUUID()}`;
  const observed: Array<{ wallAt: number; png: Buffer }> = [];
  try {
    for (const colour of ["#b00000", "#00a000", "#0000c0"]) {
      const started = await robot.shell(session, {
        command: `(xterm -T ${title} -bg '${colour}' -geometry 400x120+0+0 >/dev/null 2>&1 &) ; sleep 1.5`,
      });
      expect(started.exit).toMatchObject({ code: 0 });
      const before = Date.now();
      const shot = await robot.raw(session, "POST", "/observe");
      expect(shot.status).toBe(200);
      const png = Buffer.from(await shot.arrayBuffer());
      observed.push({ wallAt: (before + Date.now()) / 2, png });
      await sleep(1_000);
    }
  } finally {
    await robot.shell(session, { command: `pkill -f ${title} || true` });
  }
  expectStatus(await robot.end(session), 200);

  const done = await until(
    "the recording to end",
    async () => {
      const got = expectStatus(await w.people.admin.get(`${recordingsPath()}/${recording.id}`), 200).json;
      return got.status === "recording" ? undefined : got;
    },
    30_000,
  );
  expect(done).toMatchObject({ status: "complete", incompleteReason: null, width: 1280, height: 800 });

  // The middle observation, and the frame the recording holds for that moment.
  const middle = observed[1];
  if (!middle) throw new Error("no middle observation");
  const at = Math.round(middle.wallAt - Date.parse(done.startedAt));
  expect(at).toBeGreaterThan(0);
  expect(at).toBeLessThan(done.durationMs);
  const frame = await w.people.admin.fetch("GET", `${recordingsPath()}/${recording.id}/frame?at=${at}`);
  expect(frame.status).toBe(200);
  expect(frame.headers.get("content-type")).toBe("image/png");
  const decoded = Buffer.from(await frame.arrayBuffer());
  expect(agreement(decoded, middle.png)).toBeGreaterThan(0.95);
  // and it is that moment's screen, not the one before or after it
  for (const other of [observed[0], observed[2]]) {
    if (other) expect(agreement(decoded, other.png)).toBeLessThan(0.5);
  }

  // Watching it is on the record.
  const audit = expectStatus(
    await w.people.owner.get(`/v1/workspaces/${w.workspaceId}/audit-events?action=recording.played`),
    200,
  ).json;
  expect(JSON.stringify(audit)).toContain(recording.id);
}, 180_000);
