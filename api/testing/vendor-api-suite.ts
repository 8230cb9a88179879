import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointsOn } from "./checkpoints.ts";
import { destroyMachines } from "./computers.ts";
import { expectStatus, startTestApi, type TestApi } from "./harness.ts";
import { filesOf } from "./homes.ts";
import { createBot, problem, SessionClient } from "./sessions.ts";
import { until } from "./until.ts";
import { buildWorld, type World } from "./world.ts";

/** A machine as the vendor's emulator reports it, its state in the vendor's own words. */
export interface VendorMachine {
  id: string;
  state: string;
}

/**
 * What the shared suite needs of one remote vendor and its loopback emulator. `Emulator` is the
 * emulator's own handle, given back to the vendor file for cases only that vendor has.
 */
export interface VendorUnderTest<Emulator extends { apiKey: string }> {
  /** As the tests' names say it: "E2B", "Daytona", "Box". */
  name: string;
  /** SANDBOX_PROVIDER, and so every computer's provider_kind. */
  kind: string;
  /** The variable holding the vendor's key: a refused key's problem must name it. */
  keyVariable: string;
  /** A key the emulator refuses: a refused key's problem must not repeat it. */
  wrongKey: string;
  /**
   * The vendor's names for a machine's state: running, and stopped as Cubicle's idle suspension
   * leaves it (e2b running/paused, daytona started/stopped, box ready/archived).
   */
  states: { running: string; stopped: string };
  /** Starts the emulator; `instance` names its containers. */
  start(instance: string): Promise<Emulator>;
  /** The api's environment besides SANDBOX_PROVIDER for this key: the key and the emulator's URLs. */
  env(emulator: Emulator, apiKey: string): Record<string, string>;
  /** The machine the vendor has under this providerRef, or undefined when it has none. */
  machine(emulator: Emulator, providerRef: string): Promise<VendorMachine | undefined>;
  /** Deletes the machine behind its users' back, as a vendor might. */
  forget(emulator: Emulator, providerRef: string): Promise<void>;
  /** Stops the emulator and removes every machine it made. */
  close(emulator: Emulator): Promise<void>;
}

const SLOW = 240_000;
const IDLE_MS = 30_000;

/**
 * The api on SANDBOX_PROVIDER=<vendor>, configured only by the vendor's own variables, against the
 * vendor's loopback emulator (the vendor's unmodified SDK or REST API; real desktops in the local
 * Docker engine): stdout and stderr apart and streamed as written, exit codes, timeouts and the
 * output cap through the REST API, idle suspension as a stop and a start of the same machine, a
 * machine the vendor forgot replaced and restored from the latest checkpoint before any tool runs,
 * and a refused key. For *.postgres test files: run once, on the production dialect; machines are
 * heavy.
 *
 * Registers its describe blocks where it is called; the cases run in this order, before any the
 * vendor file registers after the call. The handle gives those the emulator and the api.
 */
export function vendorApiSuite<Emulator extends { apiKey: string }>(vendor: VendorUnderTest<Emulator>) {
  const { name, kind, states } = vendor;
  let emulator: Emulator | undefined;
  let t: TestApi;
  let w: World;
  // The computers are used the way bots use them: through a workspace API key (member role).
  let automation: SessionClient;
  const c = checkpointsOn(
    () => t,
    () => w,
  );
  const started = () => {
    if (!emulator) throw new Error(`the ${name} emulator has not started`);
    return emulator;
  };
  const envFor = (apiKey: string) => ({
    SANDBOX_PROVIDER: kind,
    ...vendor.env(started(), apiKey),
  });
  const machineOf = async (computerId: string) => {
    const ref = (await c.computerRow(computerId)).provider_ref;
    return ref === null ? undefined : vendor.machine(started(), ref);
  };

  beforeAll(async () => {
    emulator = await vendor.start(`api-${kind}-${process.pid}`);
    t = await startTestApi({ ...envFor(emulator.apiKey), SANDBOX_IDLE_MS: String(IDLE_MS) });
    w = await buildWorld(t, kind);
    const key = expectStatus(
      await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
        name: "robot",
        role: "member",
      }),
      201,
    ).json.key as string;
    automation = new SessionClient({ client: t.client(), apiKey: key }, w.workspaceId);
  }, SLOW);

  afterAll(async () => {
    if (t) {
      await destroyMachines(t);
      await t.close();
    }
    if (emulator) await vendor.close(emulator);
  }, SLOW);

  describe(`commands on a ${name} computer`, () => {
    // One computer for the commands: each case opens and ends its own session on it.
    let bot: { id: string; computerId: string };
    beforeAll(async () => {
      bot = await createBot(w.people.admin, w.workspaceId, "private");
    });

    it(
      "streams stdout and stderr apart as they are written, and keeps the exit code",
      async () => {
        const s = await automation.opened(bot.id);
        expect((await c.computerRow(bot.computerId)).provider_kind).toBe(kind);

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
        expectStatus(await automation.end(s, "success"), 200);
      },
      SLOW,
    );

    it(
      "keeps a failing exit code and its stderr",
      async () => {
        const s = await automation.opened(bot.id);
        const failing = await automation.shell(s, { command: "echo out; echo broke >&2; exit 3" });
        expect(failing.exit).toMatchObject({ type: "exit", code: 3 });
        expect(failing.stdout).toBe("out\n");
        expect(failing.stderr).toBe("broke\n");
        expectStatus(await automation.end(s, "success"), 200);
      },
      SLOW,
    );

    it(
      "kills a timed-out command's whole tree",
      async () => {
        const s = await automation.opened(bot.id);
        const slow = await automation.shell(s, {
          command: "sleep 301 & sleep 302 & (setsid sleep 303 &); sleep 304",
          timeoutMs: 2_000,
        });
        expect(slow.exit).toMatchObject({ code: 124, message: "command timed out after 2000 ms" });
        const left = await automation.shell(s, { command: "pgrep -f 'sleep 30[1-4]' || echo none" });
        expect(left.stdout, "processes of the timed-out command still in the machine").toBe("none\n");
        expectStatus(await automation.end(s, "success"), 200);
      },
      SLOW,
    );

    it(
      "caps 50 MB of output with bounded api memory",
      async () => {
        const s = await automation.opened(bot.id);
        const before = process.memoryUsage().heapUsed;
        let peak = before;
        const sampler = setInterval(() => {
          peak = Math.max(peak, process.memoryUsage().heapUsed);
        }, 20);
        const flood = await automation
          .shell(s, {
            command: "head -c 52428800 /dev/zero | tr '\\0' x; echo done >&2",
            maxOutputBytes: 1_048_576,
            timeoutMs: 120_000,
          })
          .finally(() => clearInterval(sampler));
        expect(flood.exit).toMatchObject({ code: 0, truncated: true });
        expect(flood.stdout.split("\n[cubicle: output truncated]\n")).toHaveLength(2);
        expect(flood.stdout.length).toBeLessThan(1_048_576 + 100);
        // 50 MB went through the machine; the api held at most the cap, with room for the rest of
        // the test process (the response body itself is 1 MB as text and again as JSON lines)
        expect(peak - before, "api heap growth while 50 MB were printed").toBeLessThan(32 * 1024 * 1024);
        expectStatus(await automation.end(s, "success"), 200);
      },
      SLOW,
    );
  });

  describe(`a ${name} computer's lifecycle`, () => {
    it(
      `is ${states.stopped} when idle and ${states.running} again, the same machine with its files, by the next session`,
      async () => {
        const bot = await createBot(w.people.admin, w.workspaceId, "private");
        const first = await automation.opened(bot.id);
        const proof = `kept while ${states.stopped}\n`;
        expectStatus(await automation.write(first, "proof.txt", proof), 204);
        expectStatus(await automation.end(first, "success"), 200);
        const running = await machineOf(bot.computerId);
        expect(running?.state).toBe(states.running);

        const suspended = await until(
          "the idle job to suspend the computer",
          async () => {
            const row = await c.computerRow(bot.computerId);
            return row.state === "suspended" ? row : undefined;
          },
          IDLE_MS + 90_000,
        );
        expect(suspended.provider_ref).toBe(running?.id);
        expect((await machineOf(bot.computerId))?.state, "the machine at the vendor").toBe(states.stopped);

        const second = await automation.opened(bot.id);
        expect((await c.computerRow(bot.computerId)).provider_ref).toBe(running?.id);
        expect((await machineOf(bot.computerId))?.state).toBe(states.running);
        expect(expectStatus(await automation.read(second, "proof.txt"), 200).text).toBe(proof);
        expectStatus(await automation.end(second, "success"), 200);
      },
      SLOW,
    );

    it(
      "replaces a machine the vendor forgot with a fresh one restored from the latest checkpoint before any tool runs",
      async () => {
        const bot = await createBot(w.people.admin, w.workspaceId, "private");
        const first = await automation.opened(bot.id);
        expectStatus(await automation.write(first, "notes/kept.txt", "from the checkpoint\n"), 204);
        expectStatus(await automation.end(first, "success"), 200);
        // the end of a session takes a checkpoint
        await until(
          "the end-of-session checkpoint",
          async () => ((await c.list(bot.computerId)).length > 0 ? true : undefined),
          60_000,
        );
        const lost = (await c.computerRow(bot.computerId)).provider_ref as string;
        await vendor.forget(started(), lost);

        const second = await automation.opened(bot.id);
        const replaced = (await c.computerRow(bot.computerId)).provider_ref;
        expect(replaced).not.toBe(lost);
        expect((await machineOf(bot.computerId))?.state).toBe(states.running);
        // the very first tool call sees the restored home
        expect(expectStatus(await automation.read(second, "notes/kept.txt"), 200).text).toBe(
          "from the checkpoint\n",
        );
        expectStatus(await automation.end(second, "success"), 200);
      },
      SLOW,
    );
    it(
      "a stop right after a session ends waits for that session's checkpoint, which keeps the home whole",
      async () => {
        const bot = await createBot(w.people.admin, w.workspaceId, "private");
        const s = await automation.opened(bot.id);
        // big enough that the checkpoint's export is still streaming when the stop arrives
        const made = await automation.shell(s, {
          command: "head -c 8388608 /dev/urandom > big.bin && sha256sum big.bin",
          timeoutMs: 60_000,
        });
        expect(made.exit, made.stderr).toMatchObject({ code: 0 });
        const digest = made.stdout.split(" ")[0];
        expectStatus(await automation.end(s, "success"), 200);
        expectStatus(
          await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/computers/${bot.computerId}/stop`),
          200,
        );
        expect((await machineOf(bot.computerId))?.state).toBe(states.stopped);

        // the session's checkpoint finished before the machine stopped, with the whole file
        const kept = (await c.list(bot.computerId)).find((r) => r.reason === "session-success");
        expect(kept, "the session-end checkpoint").toBeDefined();
        const files = filesOf(await c.download(bot.computerId, kept?.id as string));
        expect(files["big.bin"]).toBe(digest);
      },
      SLOW,
    );
  });

  describe(`a refused ${name} key`, () => {
    it("makes the first provision a clear problem, not a 500", { timeout: SLOW }, async () => {
      const wrong = await startTestApi(envFor(vendor.wrongKey));
      try {
        const world = await buildWorld(wrong, `${kind}-wrong-key`);
        const bot = await createBot(world.people.admin, world.workspaceId, "private");
        const owner = new SessionClient({ client: world.people.owner }, world.workspaceId);
        const opened = await owner.open(bot.id);
        const body = problem(opened, 502, "PROVIDER_AUTH_FAILED");
        expect(body.detail).toContain(vendor.keyVariable);
        expect(body.detail).not.toContain(vendor.wrongKey);
      } finally {
        await wrong.close();
      }
    });
  });

  return {
    /** The running emulator, for a vendor's own cases. */
    emulator: started,
    /** The api under test and its world. */
    api: () => t,
    world: () => w,
  };
}

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
