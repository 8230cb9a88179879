import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DesktopAction, MachineRef, SandboxProvider } from "../../src/contract/index.ts";
import {
  bytes,
  CASE_TIMEOUT_MS,
  collectRun,
  expectProviderError,
  Machines,
  type MakeProvider,
  type ProviderUnderTest,
  readStream,
  snapshotHome,
  streamOf,
  testRef,
  uniqueHomeKey,
} from "./types.ts";

const MOVE: DesktopAction[] = [{ type: "move", x: 10, y: 10 }];

async function seed(p: SandboxProvider, ref: MachineRef, tag: string): Promise<void> {
  await p.writeFile(ref, `${tag}.txt`, bytes(`${tag}\n`));
  await p.writeFile(ref, `${tag}/tool.sh`, bytes(`echo ${tag}\n`), { executable: true });
  await p.writeFile(
    ref,
    `${tag}/data.bin`,
    new Uint8Array(512).map((_, i) => (i * 31 + tag.length) % 256),
  );
}

/**
 * Injected failures at the real failure points (README "Faults"), and the error codes for
 * machines that are stopped or gone. Each case gets its own provider, so an armed fault a broken
 * backend never took cannot leak into the next case.
 */
export function faultSuite(name: string, make: MakeProvider): void {
  describe(`${name} faults`, () => {
    let put: ProviderUnderTest | undefined;
    const current = (): ProviderUnderTest => {
      if (!put) throw new Error(`${name}: the provider was not made`);
      return put;
    };
    const machines = new Machines(() => current().provider);

    beforeEach(async () => {
      put = await make();
    });
    afterEach(async () => {
      await machines.destroyAll();
      await put?.cleanup();
      put = undefined;
    });

    it(
      "a failed provision reports PROVIDER_FAILURE and the next one succeeds",
      async () => {
        const { provider: p, faults } = current();
        const homeKey = uniqueHomeKey("fault");
        faults.arm("provision");
        await expectProviderError(p.provision(testRef(homeKey, null)), "PROVIDER_FAILURE");
        expect(faults.take("provision"), "the provider consumed the armed fault").toBe(false);

        const next = await p.provision(testRef(homeKey, null));
        const ref = machines.track(testRef(homeKey, next.providerRef));
        expect(next.fresh).toBe(true);
        expect(await p.status(ref)).toBe("running");
        const ran = await collectRun(p, ref, { command: "echo up", timeoutMs: 5_000 });
        expect(ran.stdout).toBe("up\n");
      },
      CASE_TIMEOUT_MS,
    );

    it(
      "a broken export stream rejects, and the next export works and round-trips",
      async () => {
        const { provider: p, faults } = current();
        const source = await machines.fresh("fault");
        await seed(p, source, "exported");
        const expected = await snapshotHome(p, source);

        faults.arm("export");
        const broken = await p.exportHome(source);
        const failure = await expectProviderError(
          readStream(broken),
          "PROVIDER_FAILURE",
          undefined,
          "export read",
        );
        expect(failure).toBeInstanceOf(Error);
        expect(faults.take("export"), "the provider consumed the armed fault").toBe(false);
        expect(await snapshotHome(p, source), "a failed export leaves the home alone").toEqual(expected);

        const tar = await readStream(await p.exportHome(source));
        const target = await machines.fresh("fault-target");
        await p.importHome(target, streamOf(tar));
        expect(await snapshotHome(p, target)).toEqual(expected);
      },
      CASE_TIMEOUT_MS,
    );

    it(
      "a failed import leaves the previous contents byte-exact, and the next import succeeds",
      async () => {
        const { provider: p, faults } = current();
        const source = await machines.fresh("fault");
        await seed(p, source, "incoming");
        const incoming = await snapshotHome(p, source);
        const tar = await readStream(await p.exportHome(source));

        const target = await machines.fresh("fault-target");
        await seed(p, target, "previous");
        await p.writeFile(target, "incoming.txt", bytes("the target's own version, not the source's\n"));
        const previous = await snapshotHome(p, target);

        faults.arm("import");
        await expectProviderError(
          p.importHome(target, streamOf(tar)),
          "PROVIDER_FAILURE",
          undefined,
          "import",
        );
        expect(faults.take("import"), "the provider consumed the armed fault").toBe(false);
        expect(await snapshotHome(p, target), "the old contents stay after a failed import").toEqual(
          previous,
        );

        await p.importHome(target, streamOf(tar));
        expect(await snapshotHome(p, target)).toEqual(incoming);
      },
      CASE_TIMEOUT_MS,
    );

    it(
      "a command after a failed one still works",
      async () => {
        const { provider: p } = current();
        const ref = await machines.fresh("fault");
        expect((await collectRun(p, ref, { command: "exit 7", timeoutMs: 5_000 })).exit.code).toBe(7);
        const noisy = await collectRun(p, ref, { command: "echo broken >&2; false", timeoutMs: 5_000 });
        expect(noisy.exit.code).toBe(1);
        expect(noisy.stderr).toBe("broken\n");
        expect(
          (await collectRun(p, ref, { command: "cat missing.txt", timeoutMs: 5_000 })).exit.code,
        ).not.toBe(0);
        expect((await collectRun(p, ref, { command: "sleep 30", timeoutMs: 300 })).exit.code).toBe(124);

        const ok = await collectRun(p, ref, { command: "echo ok", timeoutMs: 5_000 });
        expect(ok.stdout).toBe("ok\n");
        expect(ok.exit).toMatchObject({ code: 0, truncated: false });
      },
      CASE_TIMEOUT_MS,
    );

    it(
      "run, observe and act on a stopped machine fail with MACHINE_STOPPED",
      async () => {
        const { provider: p } = current();
        const ref = await machines.fresh("fault");
        await p.stop(ref);
        await expectProviderError(
          collectRun(p, ref, { command: "echo hi", timeoutMs: 5_000 }),
          "MACHINE_STOPPED",
          undefined,
          "run",
        );
        if (p.capabilities.graphical) {
          await expectProviderError(p.observe(ref, 0), "MACHINE_STOPPED", undefined, "observe");
          await expectProviderError(p.act(ref, 0, MOVE), "MACHINE_STOPPED", undefined, "act");
        }

        await p.provision(ref);
        const ran = await collectRun(p, ref, { command: "echo back", timeoutMs: 5_000 });
        expect(ran.stdout).toBe("back\n");
      },
      CASE_TIMEOUT_MS,
    );

    it(
      "operations on an unknown or destroyed machine fail with MACHINE_MISSING",
      async () => {
        const { provider: p } = current();
        const real = await machines.fresh("fault");
        await p.writeFile(real, "a.txt", bytes("a"));
        const tar = await readStream(await p.exportHome(real));
        const destroyed = await machines.fresh("fault");
        await p.destroy(destroyed);

        const unknown: MachineRef = testRef(uniqueHomeKey("fault"), "no-such-machine-0000");
        for (const ref of [unknown, destroyed]) {
          const which = ref === unknown ? "unknown" : "destroyed";
          const missing = (label: string, attempt: () => Promise<unknown>) =>
            expectProviderError(attempt, "MACHINE_MISSING", undefined, `${label} on a ${which} machine`);
          expect(await p.status(ref)).toBe("missing");
          await missing("stop", () => p.stop(ref));
          await missing("run", () => collectRun(p, ref, { command: "echo hi", timeoutMs: 5_000 }));
          await missing("listFiles", () => p.listFiles(ref, ""));
          await missing("readFile", () => p.readFile(ref, "a.txt", { maxBytes: 100 }));
          await missing("writeFile", () => p.writeFile(ref, "a.txt", bytes("a")));
          await missing("deleteFile", () => p.deleteFile(ref, "a.txt"));
          await missing("exportHome", async () => readStream(await p.exportHome(ref)));
          await missing("importHome", () => p.importHome(ref, streamOf(tar)));
          if (p.capabilities.graphical) {
            await missing("openScreen", () => p.openScreen(ref, 0));
            await missing("openControl", () => p.openControl(ref, 0, "ctl12345"));
            await missing("closeControl", () => p.closeControl(ref, 0));
            await missing("observe", () => p.observe(ref, 0));
            await missing("act", () => p.act(ref, 0, MOVE));
          }
          const keepAlive = p.keepAlive?.bind(p);
          if (keepAlive) await missing("keepAlive", () => keepAlive(ref));
          await p.destroy(ref);
        }
      },
      CASE_TIMEOUT_MS,
    );
  });
}
