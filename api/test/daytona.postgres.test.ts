import { type DaytonaEmulator, startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointsOn } from "./support/checkpoints.ts";
import { destroyMachines } from "./support/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "./support/harness.ts";
import { createBot, problem, SessionClient } from "./support/sessions.ts";
import { until } from "./support/until.ts";
import { buildWorld, type World } from "./support/world.ts";

/**
 * The api on SANDBOX_PROVIDER=daytona, configured only by DAYTONA_API_KEY, DAYTONA_API_URL and
 * DAYTONA_TARGET, against the loopback Daytona emulator (the unmodified SDK; real desktops in the
 * local Docker engine): stdout and stderr apart and streamed as written, exit codes and timeouts
 * through the REST API, idle suspension as a stop and an explicit start of the same sandbox, a
 * deleted sandbox replaced and restored from the latest checkpoint, and a refused key.
 * (A *.postgres test: run once, on the production dialect; sandboxes are heavy.)
 */
const SLOW = 240_000;
const IDLE_MS = 30_000;

let emulator: DaytonaEmulator;
let t: TestApi;
let w: World;
let automation: SessionClient;
const c = checkpointsOn(
  () => t,
  () => w,
);

const daytonaEnv = (apiKey: string) => ({
  SANDBOX_PROVIDER: "daytona",
  DAYTONA_API_KEY: apiKey,
  DAYTONA_API_URL: emulator.apiUrl,
  DAYTONA_TARGET: emulator.target,
});

beforeAll(async () => {
  emulator = await startDaytonaEmulator({ instance: `api-daytona-${process.pid}` });
  t = await startTestApi({ ...daytonaEnv(emulator.apiKey), SANDBOX_IDLE_MS: String(IDLE_MS) });
  w = await buildWorld(t, "daytona");
  const key = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "robot", role: "member" }),
    201,
  ).json.key as string;
  automation = new SessionClient({ client: t.client(), apiKey: key }, w.workspaceId);
}, SLOW);

afterAll(async () => {
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await emulator?.close({ removeSandboxes: true });
}, SLOW);

const sandboxOf = async (computerId: string) => {
  const ref = (await c.computerRow(computerId)).provider_ref;
  return (await emulator.sandboxes()).find((sandbox) => sandbox.id === ref);
};

/** The NDJSON events of a streamed shell response, each with when it arrived. */
async function timedEvents(response: Response) {
  const events: Array<{ at: number; event: { type: string; data?: string; code?: number } }> = [];
  const decoder = new TextDecoder();
  let pending = "";
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const at = Date.now();
    pending += decoder.decode(value, { stream: true });
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) if (line !== "") events.push({ at, event: JSON.parse(line) });
  }
  return events;
}

describe("commands on a Daytona computer", () => {
  it(
    "streams stdout and stderr apart as they are written, keeps exit codes, and kills a timed-out command's whole tree",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const s = await automation.opened(bot.id);
      expect((await c.computerRow(bot.computerId)).provider_kind).toBe("daytona");

      const response = await automation.raw(s, "POST", "/shell", {
        body: JSON.stringify({ command: "echo first; sleep 3; echo second >&2; exit 5" }),
        headers: { "content-type": "application/json" },
      });
      expect(response.status).toBe(200);
      const events = await timedEvents(response);
      const first = events.find(({ event }) => event.type === "stdout");
      const second = events.find(({ event }) => event.type === "stderr");
      expect(first?.event.data).toBe("first\n");
      expect(second?.event.data).toBe("second\n");
      // the first line reached the caller while the command still slept before writing the second
      expect((second?.at ?? 0) - (first?.at ?? 0), "ms between the two lines' arrivals").toBeGreaterThan(
        2_000,
      );
      expect(events.at(-1)?.event).toMatchObject({ type: "exit", code: 5 });

      const slow = await automation.shell(s, {
        command: "sleep 301 & sleep 302 & (setsid sleep 303 &); sleep 304",
        timeoutMs: 2_000,
      });
      expect(slow.exit).toMatchObject({ code: 124, message: "command timed out after 2000 ms" });
      const left = await automation.shell(s, { command: "pgrep -f 'sleep 30[1-4]' || echo none" });
      expect(left.stdout, "processes of the timed-out command still in the sandbox").toBe("none\n");
      expectStatus(await automation.end(s, "success"), 200);
    },
    SLOW,
  );
});

describe("a Daytona computer's lifecycle", () => {
  it(
    "is stopped when idle and started again, the same sandbox with its files, by the next session",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const first = await automation.opened(bot.id);
      expectStatus(await automation.write(first, "proof.txt", "kept through a stop\n"), 204);
      expectStatus(await automation.end(first, "success"), 200);
      const running = await sandboxOf(bot.computerId);
      expect(running?.state).toBe("started");

      const suspended = await until(
        "the idle job to suspend the computer",
        async () => {
          const row = await c.computerRow(bot.computerId);
          return row.state === "suspended" ? row : undefined;
        },
        IDLE_MS + 90_000,
      );
      expect(suspended.provider_ref).toBe(running?.id);
      expect((await sandboxOf(bot.computerId))?.state, "the sandbox at the vendor").toBe("stopped");

      const second = await automation.opened(bot.id);
      expect((await c.computerRow(bot.computerId)).provider_ref).toBe(running?.id);
      expect((await sandboxOf(bot.computerId))?.state).toBe("started");
      expect(expectStatus(await automation.read(second, "proof.txt"), 200).text).toBe(
        "kept through a stop\n",
      );
      expectStatus(await automation.end(second, "success"), 200);
    },
    SLOW,
  );

  it(
    "replaces a deleted sandbox with a fresh one restored from the latest checkpoint before any tool runs",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const first = await automation.opened(bot.id);
      expectStatus(await automation.write(first, "notes/kept.txt", "from the checkpoint\n"), 204);
      expectStatus(await automation.end(first, "success"), 200);
      await until(
        "the end-of-session checkpoint",
        async () => ((await c.list(bot.computerId)).length > 0 ? true : undefined),
        60_000,
      );
      const lost = (await c.computerRow(bot.computerId)).provider_ref as string;
      await emulator.forget(lost);

      const second = await automation.opened(bot.id);
      const replaced = (await c.computerRow(bot.computerId)).provider_ref;
      expect(replaced).not.toBe(lost);
      expect((await sandboxOf(bot.computerId))?.state).toBe("started");
      expect(expectStatus(await automation.read(second, "notes/kept.txt"), 200).text).toBe(
        "from the checkpoint\n",
      );
      expectStatus(await automation.end(second, "success"), 200);
    },
    SLOW,
  );
});

describe("a refused Daytona key", () => {
  it("makes the first provision a clear problem, not a 500", { timeout: SLOW }, async () => {
    const wrong = await startTestApi(daytonaEnv("dtn_wrong_key"));
    try {
      const world = await buildWorld(wrong, "daytona-wrong-key");
      const bot = await createBot(world.people.admin, world.workspaceId, "private");
      const opened = await new SessionClient({ client: world.people.owner }, world.workspaceId).open(bot.id);
      const body = problem(opened, 502, "PROVIDER_AUTH_FAILED");
      expect(body.detail).toContain("DAYTONA_API_KEY");
      expect(body.detail).not.toContain("dtn_wrong_key");
    } finally {
      await wrong.close();
    }
  });
});
