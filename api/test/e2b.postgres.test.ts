import { type E2bEmulator, startE2bEmulator } from "@cubicle/emulators/e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointsOn } from "./support/checkpoints.ts";
import { destroyMachines } from "./support/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "./support/harness.ts";
import { createBot, problem, SessionClient } from "./support/sessions.ts";
import { until } from "./support/until.ts";
import { buildWorld, type World } from "./support/world.ts";

/**
 * The api on SANDBOX_PROVIDER=e2b, configured only by E2B_API_KEY and the SDK's own redirect
 * settings, against the loopback E2B emulator (the unmodified SDK; real desktops in the local
 * Docker engine): commands with their exit codes, timeouts and output cap through the REST API,
 * idle suspension as a pause and a resume of the same sandbox, a sandbox the vendor forgot
 * replaced and restored from the latest checkpoint before any tool runs, and a refused key.
 * (A *.postgres test: run once, on the production dialect; sandboxes are heavy.)
 */
const SLOW = 240_000;
const IDLE_MS = 30_000;

let emulator: E2bEmulator;
let t: TestApi;
let w: World;
const c = checkpointsOn(
  () => t,
  () => w,
);

const e2bEnv = (apiKey: string) => ({
  SANDBOX_PROVIDER: "e2b",
  E2B_API_KEY: apiKey,
  E2B_API_URL: emulator.apiUrl,
  E2B_SANDBOX_URL: emulator.sandboxUrl,
  E2B_DOMAIN: emulator.domain,
});

beforeAll(async () => {
  emulator = await startE2bEmulator({ instance: `api-e2b-${process.pid}` });
  t = await startTestApi({ ...e2bEnv(emulator.apiKey), SANDBOX_IDLE_MS: String(IDLE_MS) });
  w = await buildWorld(t, "e2b");
}, SLOW);

afterAll(async () => {
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await emulator?.close({ removeSandboxes: true });
}, SLOW);

const sessions = () => new SessionClient({ client: w.people.owner }, w.workspaceId);
const sandboxOf = async (computerId: string) => {
  const ref = (await c.computerRow(computerId)).provider_ref;
  return (await emulator.sandboxes()).find((sandbox) => sandbox.sandboxId === ref);
};

describe("commands on an E2B computer", () => {
  it(
    "keeps a failing exit code and its stderr, kills a timed-out command's whole tree, and caps 50 MB of output with bounded memory",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const s = await sessions().opened(bot.id);
      expect((await c.computerRow(bot.computerId)).provider_kind).toBe("e2b");

      const failing = await sessions().shell(s, { command: "echo out; echo broke >&2; exit 3" });
      expect(failing.exit).toMatchObject({ type: "exit", code: 3 });
      expect(failing.stdout).toBe("out\n");
      expect(failing.stderr).toBe("broke\n");

      const slow = await sessions().shell(s, {
        command: "sleep 301 & sleep 302 & (setsid sleep 303 &); sleep 304",
        timeoutMs: 2_000,
      });
      expect(slow.exit).toMatchObject({ code: 124, message: "command timed out after 2000 ms" });
      const left = await sessions().shell(s, { command: "pgrep -f 'sleep 30[1-4]' || echo none" });
      expect(left.stdout, "processes of the timed-out command still in the sandbox").toBe("none\n");

      const before = process.memoryUsage().heapUsed;
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().heapUsed);
      }, 20);
      const flood = await sessions().shell(s, {
        command: "head -c 52428800 /dev/zero | tr '\\0' x; echo done >&2",
        maxOutputBytes: 1_048_576,
        timeoutMs: 120_000,
      });
      clearInterval(sampler);
      expect(flood.exit).toMatchObject({ code: 0, truncated: true });
      expect(flood.stdout.split("\n[cubicle: output truncated]\n")).toHaveLength(2);
      expect(flood.stdout.length).toBeLessThan(1_048_576 + 100);
      // 50 MB went through the sandbox; the api held at most the cap, with room for the rest of
      // the test process (the response body itself is 1 MB as text and again as JSON lines)
      expect(peak - before, "api heap growth while 50 MB were printed").toBeLessThan(32 * 1024 * 1024);
      expectStatus(await sessions().end(s, "success"), 200);
    },
    SLOW,
  );
});

describe("an E2B computer's lifecycle", () => {
  it(
    "is paused when idle and resumed, the same sandbox with its files, by the next session",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const first = await sessions().opened(bot.id);
      expectStatus(await sessions().write(first, "proof.txt", "kept through a pause\n"), 204);
      expectStatus(await sessions().end(first, "success"), 200);
      const running = await sandboxOf(bot.computerId);
      expect(running?.state).toBe("running");

      const suspended = await until(
        "the idle job to suspend the computer",
        async () => {
          const row = await c.computerRow(bot.computerId);
          return row.state === "suspended" ? row : undefined;
        },
        IDLE_MS + 90_000,
      );
      expect(suspended.provider_ref).toBe(running?.sandboxId);
      expect((await sandboxOf(bot.computerId))?.state, "the sandbox at the vendor").toBe("paused");

      const second = await sessions().opened(bot.id);
      expect((await c.computerRow(bot.computerId)).provider_ref).toBe(running?.sandboxId);
      expect((await sandboxOf(bot.computerId))?.state).toBe("running");
      expect(expectStatus(await sessions().read(second, "proof.txt"), 200).text).toBe(
        "kept through a pause\n",
      );
      expectStatus(await sessions().end(second, "success"), 200);
    },
    SLOW,
  );

  it(
    "replaces a sandbox the vendor forgot with a fresh one restored from the latest checkpoint before any tool runs",
    async () => {
      const bot = await createBot(w.people.admin, w.workspaceId, "private");
      const first = await sessions().opened(bot.id);
      expectStatus(await sessions().write(first, "notes/kept.txt", "from the checkpoint\n"), 204);
      expectStatus(await sessions().end(first, "success"), 200);
      // the end of a session takes a checkpoint
      await until(
        "the end-of-session checkpoint",
        async () => ((await c.list(bot.computerId)).length > 0 ? true : undefined),
        60_000,
      );
      const lost = (await c.computerRow(bot.computerId)).provider_ref as string;
      await emulator.forget(lost);

      const second = await sessions().opened(bot.id);
      const replaced = (await c.computerRow(bot.computerId)).provider_ref;
      expect(replaced).not.toBe(lost);
      expect((await sandboxOf(bot.computerId))?.state).toBe("running");
      // the very first tool call sees the restored home
      expect(expectStatus(await sessions().read(second, "notes/kept.txt"), 200).text).toBe(
        "from the checkpoint\n",
      );
      expectStatus(await sessions().end(second, "success"), 200);
    },
    SLOW,
  );
});

describe("a refused E2B key", () => {
  it("makes the first provision a clear problem, not a 500", { timeout: SLOW }, async () => {
    const wrong = await startTestApi(e2bEnv("e2b_wrong_key"));
    try {
      const world = await buildWorld(wrong, "e2b-wrong-key");
      const bot = await createBot(world.people.admin, world.workspaceId, "private");
      const opened = await new SessionClient({ client: world.people.owner }, world.workspaceId).open(bot.id);
      const body = problem(opened, 502, "PROVIDER_AUTH_FAILED");
      expect(body.detail).toContain("E2B_API_KEY");
      expect(body.detail).not.toContain("e2b_wrong_key");
    } finally {
      await wrong.close();
    }
  });
});
