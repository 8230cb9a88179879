import type { TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApi, startApi } from "../../src/server.ts";
import { destroyMachines } from "../../testing/computers.ts";
import { expectStatus, type TestApi, TestClient } from "../../testing/harness.ts";
import { createBot, type OpenedSession, problem, SessionClient, sleep } from "../../testing/sessions.ts";
import { startApiOnTestSupervisor } from "../../testing/supervisor-process.ts";
import { buildWorld, type World } from "../../testing/world.ts";

/** Containers and screens start slowly on a busy host (one CPU per computer). */
const SLOW = 180_000;

/**
 * The sessions acceptance on real Docker computers (a real supervisor on the real engine, the
 * cubicle-computer image) and the database of this project (PGlite or Postgres): concurrent Team
 * bots on their own displays, Private isolation, busy / expiry / stale fences, the 9th bot without
 * a screen, and an automation that only has an API key.
 */
let supervisor: TestSupervisor;
let t: TestApi;
let w: World;
let robot: SessionClient;

beforeAll(async () => {
  ({ supervisor, t } = await startApiOnTestSupervisor());
  w = await buildWorld(t, "docker-sessions");
  const key = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
      name: "docker-robot",
      role: "member",
    }),
    201,
  ).json.key;
  robot = new SessionClient({ client: t.client(), apiKey: key }, w.workspaceId);
});

afterAll(async () => {
  // Containers outlive the supervisor process: remove every one this file made.
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await supervisor?.close();
});

const bot = (mode: "team" | "private" = "team") => createBot(w.people.admin, w.workspaceId, mode);
/** Ends every open session of the workspace through the API, so screens start free. */
async function endAll() {
  const open = expectStatus(await w.people.owner.get(`/v1/workspaces/${w.workspaceId}/sessions`), 200).json
    .items;
  const owner = new SessionClient({ client: w.people.owner }, w.workspaceId);
  for (const s of open as OpenedSession[]) expectStatus(await owner.end(s, "success"), 200);
}

describe("Team and Private computers", () => {
  it(
    "run two Team bots at once on :1 and :2, each in its folder, sharing shared/; a Private bot sees none of it",
    async () => {
      const [a, b, p] = [await bot(), await bot(), await bot("private")];
      const [sa, sb, sp] = await Promise.all([robot.opened(a.id), robot.opened(b.id), robot.opened(p.id)]);
      expect(sa.computerId).toBe(sb.computerId);
      const byScreen = [sa, sb].sort((x, y) => (x.screen ?? 0) - (y.screen ?? 0));
      expect(byScreen.map((s) => s.screen)).toEqual([0, 1]);

      // Both at once: each command sees its own display, which is a live X screen, in its own folder.
      const runs = await Promise.all(
        byScreen.map((s) => robot.shell(s, { command: 'echo "$DISPLAY"; pwd; xdotool getdisplaygeometry' })),
      );
      for (const [i, run] of runs.entries()) {
        expect(run.exit, run.stderr).toMatchObject({ code: 0 });
        expect(run.stdout).toBe(`:${i + 1}\n/home/cubicle/bots/${byScreen[i]?.botId}\n1280 800\n`);
      }
      const shots = await Promise.all(byScreen.map((s) => robot.raw(s, "POST", "/observe")));
      expect(shots.map((shot) => [shot.status, shot.headers.get("x-screen")])).toEqual([
        [200, "0"],
        [200, "1"],
      ]);

      expectStatus(await robot.write(sa, "mine.txt", "from a"), 204);
      expectStatus(await robot.write(sb, "mine.txt", "from b"), 204);
      expect((await robot.read(sa, "mine.txt")).text).toBe("from a");
      expect((await robot.read(sb, "mine.txt")).text).toBe("from b");
      expect((await robot.read(sa, `bots/${b.id}/mine.txt`)).text).toBe("from b");
      expectStatus(await robot.write(sa, "shared/plan.txt", "the plan"), 204);
      expect((await robot.read(sb, "shared/plan.txt")).text).toBe("the plan");
      expect((await robot.shell(sb, { command: "cat ../../shared/plan.txt" })).stdout).toBe("the plan");

      expect(sp).toMatchObject({ screen: 0 });
      expect(sp.computerId).not.toBe(sa.computerId);
      problem(await robot.read(sp, "shared/plan.txt"), 404, "FILE_NOT_FOUND");
      problem(await robot.read(sp, `../team-${w.workspaceId}/shared/plan.txt`), 400, "PATH_OUTSIDE_HOME");
      const look = await robot.shell(sp, {
        command:
          'pwd; ls /home; cat shared/plan.txt bots/*/mine.txt 2>/dev/null || echo "nothing of the team here"',
      });
      expect(look.stdout).toBe("/home/cubicle\ncubicle\nnothing of the team here\n");
      await endAll();
    },
    SLOW,
  );

  it(
    "refuse a second session of a bot; an expired one is reclaimed with a higher fence, its fence refused",
    async () => {
      const c = await bot();
      const first = await robot.opened(c.id);
      problem(await robot.open(c.id), 409, "COMPUTER_BUSY");
      expectStatus(await robot.end(first), 200);

      // A replica of the api on the same database and supervisor, whose sessions last 5 s: long
      // enough that a loaded machine still checks the live session before it lapses.
      const short: RunningApi = await startApi(
        { ...t.api.deps.env, port: 0, sessions: { leaseMs: 5_000 } },
        { database: t.database },
      );
      try {
        const hurried = new SessionClient(
          { client: new TestClient(short.url, t.responses), apiKey: robot.caller.apiKey },
          w.workspaceId,
        );
        const old = await hurried.opened(c.id);
        problem(await robot.open(c.id), 409, "COMPUTER_BUSY");
        expectStatus(await hurried.write(old, "log.txt", "old"), 204);
        await sleep(5_500);
        const fresh = await robot.opened(c.id);
        expect(fresh.fence).toBeGreaterThan(old.fence);
        expect(problem(await hurried.write(old, "log.txt", "stale"), 409, "STALE_FENCE").detail).toContain(
          fresh.sessionId,
        );
        problem(
          await robot.shell(old, { command: "echo stale > log.txt" }).then((r) => r.response),
          409,
          "STALE_FENCE",
        );
        expect((await robot.read(fresh, "log.txt")).text).toBe("old");
        expectStatus(await robot.end(fresh), 200);
      } finally {
        await short.close();
      }
    },
    SLOW,
  );

  it(
    "with the 8 screens held, a 9th bot's observe is MULTI_SCREEN_UNAVAILABLE while its shell runs",
    async () => {
      await endAll();
      const bots = [];
      for (let i = 0; i < 9; i++) bots.push(await bot());
      // All at once: the database hands each a distinct screen.
      const held = await Promise.all(bots.slice(0, 8).map((b) => robot.opened(b.id)));
      expect(held.map((s) => s.screen).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      const ninth = await robot.opened((bots[8] as { id: string }).id);
      expect(ninth.screen).toBeNull();
      problem(await robot.observe(ninth), 409, "MULTI_SCREEN_UNAVAILABLE");
      problem(
        await robot.tool(ninth, "POST", "/launch-app", { app: "terminal" }),
        409,
        "MULTI_SCREEN_UNAVAILABLE",
      );
      const run = await robot.shell(ninth, { command: "echo works; pwd" });
      expect(run.exit).toMatchObject({ code: 0 });
      expect(run.stdout).toBe(`works\n/home/cubicle/bots/${ninth.botId}\n`);
      expectStatus(await robot.write(ninth, "still.txt", "files too"), 204);
      await endAll();
    },
    SLOW,
  );
});

describe("an automation with only an API key", () => {
  it(
    "opens a session, runs a command, writes a file, observes, acts, starts apps and ends it",
    async () => {
      await endAll();
      const b = await bot();
      const s = await robot.opened(b.id);
      expect(s.screen).toBe(0);

      const run = await robot.shell(s, {
        command: "echo hello > hello.txt && cat hello.txt && echo err >&2",
      });
      expect(run.stdout).toBe("hello\n");
      expect(run.stderr).toBe("err\n");
      expect(run.exit).toMatchObject({ type: "exit", code: 0 });
      const timedOut = await robot.shell(s, { command: "sleep 10", timeoutMs: 500 });
      expect(timedOut.exit).toMatchObject({ code: 124 });

      expectStatus(await robot.write(s, "report.md", "# done\n"), 204);
      expect((await robot.shell(s, { command: "cat report.md" })).stdout).toBe("# done\n");

      const shot = await robot.raw(s, "POST", "/observe");
      expect(shot.status).toBe(200);
      expect(shot.headers.get("content-type")).toBe("image/png");
      expect([shot.headers.get("x-width"), shot.headers.get("x-height")]).toEqual(["1280", "800"]);
      expect([...new Uint8Array(await shot.arrayBuffer()).subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);

      const acted = expectStatus(
        await robot.tool(s, "POST", "/act", {
          actions: [
            { type: "move", x: 321, y: 123 },
            { type: "wait", ms: 50 },
          ],
        }),
        200,
      ).json;
      expect(acted).toEqual({ completed: 2, total: 2 });
      const after = await robot.raw(s, "POST", "/observe");
      expect([after.headers.get("x-cursor-x"), after.headers.get("x-cursor-y")]).toEqual(["321", "123"]);

      // Apps start detached on the session's display; open-path of a folder opens a terminal in it.
      const terminals = async () =>
        Number(
          (
            await robot.shell(s, { command: "xdotool search --onlyvisible --class xterm | wc -l" })
          ).stdout.trim(),
        );
      const before = await terminals();
      expect(expectStatus(await robot.tool(s, "POST", "/launch-app", { app: "terminal" }), 202).json).toEqual(
        {
          screen: 0,
          display: ":1",
        },
      );
      expectStatus(await robot.tool(s, "POST", "/open-path", { path: "" }), 202);
      await until(async () => (await terminals()) >= before + 2);

      const ended = expectStatus(await robot.end(s, "success"), 200).json;
      expect(ended).toMatchObject({ status: "ended", outcome: "success" });
      const trail = await t.database.db
        .selectFrom("audit_events")
        .select(["action", "actor_type", "data"])
        .where("target_id", "=", s.sessionId)
        .orderBy("id")
        .execute();
      // (how many shell calls the wait for the terminals took varies)
      const actions = trail.map((row) => row.action);
      expect(actions[0]).toBe("session.opened");
      expect(actions.at(-1)).toBe("session.ended");
      expect(new Set(actions)).toEqual(
        new Set([
          "session.opened",
          "session.shell",
          "session.file_written",
          "session.acted",
          "session.app_launched",
          "session.path_opened",
          "session.ended",
        ]),
      );
      for (const row of trail) {
        expect(row.actor_type).toBe("api_key");
        expect(row.data).toMatchObject({ fence: s.fence });
      }
      problem(await robot.write(s, "late.txt", "too late"), 409, "STALE_FENCE");
    },
    SLOW,
  );
});

async function until(condition: () => Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(250);
  }
}
