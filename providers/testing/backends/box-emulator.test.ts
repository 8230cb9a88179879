import { type BoxEmulator, QUICK_TIMINGS, startBoxEmulator } from "@cubicle/emulators/box";
import { vncAccepts, vncAnswers } from "@cubicle/host/testing/vnc";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createBoxProvider } from "../../src/box/index.ts";
import type { MachineRef, SandboxProvider } from "../../src/contract/index.ts";
import { ScreenRelays } from "../screen-relays.ts";
import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { CASE_TIMEOUT_MS, collectRun, expectProviderError, Machines, sleep } from "../suites/types.ts";
import { box } from "./index.ts";

conformanceSuite("box-emulator", box, {
  "control-has-its-own-server":
    "a box has one desktop served by Box's own noVNC socket; the proxy enforces view-only and ends control sockets with their lease",
  "egress-refusals-observed": "it enforces only the open level, so nothing is refused",
});
faultSuite("box-emulator", box);
browserSandboxSuite("box-emulator", box);

/**
 * A short lifetime, so that Box's TTL runs out inside a test; long enough that the used box, made
 * second, is up and kept alive before its own runs out.
 */
const TTL_SECONDS = 8;

describe("box-emulator: what is Box's alone", () => {
  let emulator: BoxEmulator;
  let provider: SandboxProvider;
  const machines = new Machines(() => provider);
  const relays = new ScreenRelays();

  beforeAll(async () => {
    emulator = await startBoxEmulator({ instance: `box-only-${process.pid}`, timings: QUICK_TIMINGS });
    provider = createBoxProvider({
      kind: "box-emulator",
      connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl },
    });
  });
  afterEach(async () => {
    await machines.destroyAll();
    await relays.closeAll();
  });
  afterAll(async () => {
    await machines.destroyAll();
    await emulator?.close({ removeBoxes: true });
  });

  const boxOf = async (ref: MachineRef) => (await emulator.boxes()).find((b) => b.id === ref.providerRef);

  it(
    "creates and resumes every box with noEnv, so its commands see none of the account's secrets",
    async () => {
      const ref = await machines.fresh("box-env");
      await provider.stop(ref);
      expect(await provider.provision(ref)).toEqual({ providerRef: ref.providerRef, fresh: false });
      const asked = emulator
        .requests()
        .filter((r) => r.method === "POST" && (r.path === "/api/box/v1/boxes" || r.path.endsWith("/resume")));
      expect(asked.filter((r) => r.path.endsWith("/resume")).length).toBeGreaterThanOrEqual(1);
      expect(asked.filter((r) => !r.path.endsWith("/resume")).length).toBeGreaterThanOrEqual(1);
      for (const request of asked)
        expect(request.body, `${request.method} ${request.path}`).toMatchObject({ noEnv: true });
      const env = await collectRun(provider, ref, { command: "env", timeoutMs: 30_000 });
      expect(env.exit.code).toBe(0);
      expect(env.stdout).toContain("HOME=/home/user/cubicle-home");
      expect(env.stdout).not.toMatch(/^(ASCII_TOKEN|BOX_ID)=/m);
    },
    3 * CASE_TIMEOUT_MS,
  );

  it(
    "gives one desktop server for view and control, whose token Box rotates at a stop and resume",
    async () => {
      const ref = await machines.fresh("box-screen");
      const view = await provider.openScreen(ref, 0);
      const control = await provider.openControl(ref, 0, "ctl12345");
      expect(view).toMatchObject({ kind: "vendor-websocket", url: expect.stringContaining("_token=") });
      expect(control, "control is the same desktop; the proxy enforces the mode").toEqual(view);
      const desktopCalls = emulator
        .requests()
        .filter((r) => r.method === "POST" && r.path.endsWith(`/boxes/${ref.providerRef}/desktop`));
      // Box answers "provisioning" at the first desktop call of a spell; only that makes the
      // adapter ask again, so more calls than the two screens it opened show it waited that out
      expect(desktopCalls.length, "desktop calls for two opened screens").toBeGreaterThan(2);
      if (view.kind !== "vendor-websocket") throw new Error("not a vendor target");
      expect(view.url, "the VNC password is kept out of the socket's address").not.toContain("password=");
      const before = await relays.reach(view);
      expect(await vncAnswers(before.port, before.host)).toBe(true);
      const accepted = await vncAccepts(before.port, before.password);
      if (accepted !== null) expect(accepted, "Box's VNC password opens its desktop").toBe(true);
      await expectProviderError(provider.openScreen(ref, 1), "INVALID_SCREEN");
      await provider.closeControl(ref, 0);

      await provider.stop(ref);
      expect((await boxOf(ref))?.state).toBe("archived");
      expect(await vncAnswers(before.port, before.host), "the old token while archived").toBe(false);
      await provider.provision(ref);
      const after = await provider.openScreen(ref, 0);
      if (after.kind !== "vendor-websocket") throw new Error("not a vendor target");
      expect(new URL(after.url).searchParams.get("_token")).not.toBe(
        new URL(view.url).searchParams.get("_token"),
      );
      expect(await vncAnswers(before.port, before.host), "the old token after the resume").toBe(false);
      const renewed = await relays.reach(after);
      expect(await vncAnswers(renewed.port, renewed.host), "the new token").toBe(true);
    },
    4 * CASE_TIMEOUT_MS,
  );

  it(
    "keeps a used box past its TTL by pushing it forward, while Box archives one nobody uses",
    async () => {
      const shortLived = createBoxProvider({
        kind: "box-emulator",
        connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl },
        ttlSeconds: TTL_SECONDS,
      });
      const mine = new Machines(() => shortLived);
      try {
        // the unused one first: the used one's TTL must not run out before it is used
        const unused = await mine.fresh("box-unused");
        const used = await mine.fresh("box-used");
        const deadline = Date.now() + 2.5 * TTL_SECONDS * 1000;
        while (Date.now() < deadline) {
          // what the api does at every use of a computer (a session's heartbeat, say)
          await shortLived.keepAlive?.(used);
          await sleep(1_000);
        }
        expect((await boxOf(used))?.state).toBe("ready");
        expect(await shortLived.status(used)).toBe("running");
        expect((await boxOf(unused))?.state).toBe("archived");
        expect(await shortLived.status(unused)).toBe("stopped");
        const refreshed = emulator
          .requests()
          .filter((r) => r.method === "PATCH" && r.path.endsWith(`/${used.providerRef}`));
        expect(refreshed.length).toBeGreaterThanOrEqual(3);
        for (const request of refreshed) expect(request.body).toEqual({ ttlSeconds: TTL_SECONDS });
        // the archived one resumes, like any stopped computer
        expect(await shortLived.provision(unused)).toEqual({ providerRef: unused.providerRef, fresh: false });
      } finally {
        await mine.destroyAll();
      }
    },
    4 * CASE_TIMEOUT_MS,
  );

  it(
    "waits out 429 and 503 as Retry-After says, and gives up with a clear error when Box stays busy",
    async () => {
      const ref = await machines.fresh("box-busy");
      emulator.failNext(2, 429, 1);
      const started = Date.now();
      expect(await provider.status(ref)).toBe("running");
      expect(Date.now() - started, "two waits of Retry-After: 1").toBeGreaterThanOrEqual(1_900);
      // as many as one call's attempts
      emulator.failNext(5, 503, 0);
      const error = await expectProviderError(provider.status(ref), "PROVIDER_FAILURE");
      expect(error.message).toMatch(/busy/);
      expect(await provider.status(ref)).toBe("running");
    },
    CASE_TIMEOUT_MS,
  );

  it(
    "destroys a box with Box's delete confirmation and waits until Box answers 404",
    async () => {
      const ref = await machines.fresh("box-gone");
      await provider.destroy(ref);
      expect(await boxOf(ref)).toBeUndefined();
      expect(await provider.status(ref)).toBe("missing");
      const deletesOf = () =>
        emulator
          .requests()
          .filter((r) => r.method === "DELETE" && r.path === `/api/box/v1/boxes/${ref.providerRef}`);
      expect(deletesOf()).toHaveLength(1);
      // destroying what is gone asks Box nothing more
      await provider.destroy(ref);
      expect(deletesOf()).toHaveLength(1);
    },
    2 * CASE_TIMEOUT_MS,
  );
});
