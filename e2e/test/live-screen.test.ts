import { join } from "node:path";
import { createComputer, machineFor } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi } from "@cubicle/api/testing/harness";
import { buildWorld } from "@cubicle/api/testing/world";
import { launchChromium } from "@cubicle/host/testing/chromium";
import type { RunningProxy } from "@cubicle/proxy";
import { startTestSupervisor } from "@cubicle/supervisor/testing";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiAndProxy } from "../testing/api-and-proxy.ts";
import { canvasSummary } from "../testing/canvas.ts";
import { type NovncPage, serveNovncPage } from "../testing/novnc-page.ts";

/**
 * A person's view of a live screen: Debian's Chromium runs noVNC (the client the dashboard embeds),
 * which connects through the real proxy with a view capability to a real x11vnc screen — the
 * desktop provider's on this host, and a Docker computer's through the real supervisor.
 */
interface Stack {
  name: string;
  /** A screen whose desktop has an xterm under (100, 100) to type into. */
  screen: number;
  env(): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>;
}

const STACKS: Stack[] = [
  {
    name: "desktop",
    screen: 0,
    env: async () => ({ env: { SANDBOX_PROVIDER: "desktop" }, cleanup: async () => {} }),
  },
  {
    name: "docker",
    // screen 0 of a Docker computer also shows the browser; screen 1 has only the xterm
    screen: 1,
    env: async () => {
      const supervisor = await startTestSupervisor();
      return {
        env: {
          SANDBOX_PROVIDER: "docker",
          SANDBOX_SUPERVISOR_URL: supervisor.url,
          SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
          DATA_DIR: supervisor.dataDir,
        },
        cleanup: () => supervisor.close(),
      };
    },
  },
];

let browser: Browser;
let novnc: NovncPage;

beforeAll(async () => {
  [browser, novnc] = await Promise.all([launchChromium(), serveNovncPage()]);
});

afterAll(async () => {
  await browser?.close();
  await novnc?.close();
});

async function eventually<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

for (const stack of STACKS) {
  describe(`a live screen in Chromium through the proxy (${stack.name})`, () => {
    let t: TestApi;
    let proxy: RunningProxy;
    let cleanup: () => Promise<void> = async () => {};
    let destroy: () => Promise<void> = async () => {};

    beforeAll(async () => {
      const setup = await stack.env();
      cleanup = setup.cleanup;
      ({ t, proxy } = await startApiAndProxy(setup.env, novnc.origin));
    }, 120_000);

    afterAll(async () => {
      await proxy?.close();
      await destroy();
      await t?.close();
      await cleanup();
    });

    it("shows non-uniform pixels that change when the desktop changes", { timeout: 120_000 }, async () => {
      // The page first, while nothing else loads the machine: on a busy host, a Docker computer
      // booting beside it kept its module graph from loading within the wait (seen twice in runs).
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const requested: string[] = [];
      page.on("request", (request) => requested.push(request.url()));
      const pageErrors: string[] = [];
      page.on("pageerror", (error) => pageErrors.push(error.message));
      page.on("requestfailed", (request) =>
        pageErrors.push(`${request.url()} failed: ${request.failure()?.errorText ?? "?"}`),
      );
      page.on("console", (message) => {
        if (message.type() === "error") pageErrors.push(message.text());
      });
      await page.goto(`${novnc.origin}/`);
      // the page's module (noVNC and its imports) may still be loading when "load" has fired
      await page
        .waitForFunction(
          () => typeof (window as unknown as { openScreen?: unknown }).openScreen === "function",
        )
        .catch((error: Error) => {
          throw new Error(`the noVNC page did not start: ${pageErrors.join("; ") || error.message}`);
        });

      const world = await buildWorld(t, stack.name);
      const computer = await createComputer(t, world.workspaceId);
      const { provider, ref } = await machineFor(t, computer);
      destroy = () => provider.destroy(ref);
      const path = `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/${stack.screen}/capabilities`;
      const capability = expectStatus(await world.people.viewer.post(path, { mode: "view" }), 201).json;

      expect(capability.url).toBe(`ws://127.0.0.1:${proxy.port}/screen`);
      await page.evaluate(
        ({ url, protocol, token }) =>
          (window as unknown as { openScreen: (...args: unknown[]) => void }).openScreen(
            url,
            protocol,
            token,
            true,
          ),
        { url: capability.url, protocol: capability.protocol, token: capability.token },
      );
      await page.waitForFunction(() =>
        (window as unknown as { screenEvents: { name: string }[] }).screenEvents.some(
          (e) => e.name === "connect",
        ),
      );
      const first = await eventually(
        () => canvasSummary(page),
        (s) => s.colours > 1,
      );
      expect(first.colours).toBeGreaterThan(1);
      expect(first.fingerprint).toMatch(/^1280x800:/);

      await provider.act(ref, stack.screen, [
        { type: "click", x: 100, y: 100 },
        { type: "type", text: "cubicle was here " },
      ]);
      const changed = await eventually(
        () => canvasSummary(page),
        (s) => s.fingerprint !== first.fingerprint,
      );
      expect(changed.fingerprint).not.toBe(first.fingerprint);

      // the capability went into the socket's subprotocol header, never into a URL the browser keeps
      expect(requested.some((url) => url.includes(capability.token))).toBe(false);
      await page.screenshot({
        path: join(import.meta.dirname, "..", "artifacts", `live-screen-${stack.name}.png`),
      });
      await page.close();
    });
  });
}
