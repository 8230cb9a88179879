import {
  CHROMIUM_SANDBOX_PROBE,
  type ChromiumSandboxReport,
  chromiumSandboxReport,
  expectChromiumSandboxed,
} from "@cubicle/host/testing/chromium-sandbox";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import type { SandboxProvider } from "../../src/contract/index.ts";
import {
  CASE_TIMEOUT_MS,
  collectRun,
  Machines,
  type MakeProvider,
  type ProviderUnderTest,
  sleep,
} from "./types.ts";

/**
 * The browser a backend launches keeps Chromium's own sandbox on (computer-image/seccomp/README.md):
 * for the backends that run the computer image's browser wrapper in a container (Docker, and the
 * vendors' emulated desktops, which stand for vendors' VMs where the sandbox starts). The desktop
 * provider's Chromium runs as root without it, a named exception: it does not register this suite.
 */
export function browserSandboxSuite(name: string, make: MakeProvider): void {
  describe(`${name} browser sandbox`, () => {
    let put: ProviderUnderTest | undefined;
    const provider = (): SandboxProvider => {
      if (!put) throw new Error(`${name}: the provider was not made`);
      return put.provider;
    };
    const machines = new Machines(provider);

    beforeAll(async () => {
      put = await make();
    });
    afterEach(() => machines.destroyAll());
    afterAll(async () => {
      await machines.destroyAll({ shared: true });
      await put?.cleanup();
    });

    it(
      "the launched browser's renderers run in user and PID namespaces of their own, never with --no-sandbox",
      async () => {
        const p = provider();
        const ref = await machines.fresh("sandbox");
        await p.launch(ref, 0, { kind: "app", app: "browser" }, { cwd: "" });
        let report: ChromiumSandboxReport | null = null;
        const deadline = Date.now() + CASE_TIMEOUT_MS / 2;
        while (!report && Date.now() < deadline) {
          const probe = await collectRun(p, ref, { command: CHROMIUM_SANDBOX_PROBE, timeoutMs: 10_000 });
          report = chromiumSandboxReport(probe.stdout);
          if (!report) await sleep(500);
        }
        expectChromiumSandboxed(report);
      },
      CASE_TIMEOUT_MS,
    );
  });
}
