import { join } from "node:path";
import type { ScreenTarget } from "@cubicle/providers/contract";
import type { RunningProxy } from "@cubicle/proxy";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { machineFor } from "../../api/test/support/computers.ts";
import { expectStatus, type RawResponse, type TestApi } from "../../api/test/support/harness.ts";
import { createBot, SessionClient } from "../../api/test/support/sessions.ts";
import { until } from "../../api/test/support/until.ts";
import { buildWorld, type World } from "../../api/test/support/world.ts";
import { startApiAndProxy } from "./support/api-and-proxy.ts";
import { launchChromium } from "./support/browser.ts";
import { canvasSummary } from "./support/canvas.ts";
import { type NovncPage, serveNovncPage } from "./support/novnc-page.ts";

/**
 * A Team Computer on SANDBOX_PROVIDER=e2b-emulator (the e2b adapter and the unmodified SDK against
 * the loopback emulator inside the api; its sandboxes real desktops in Docker): two bots at once on
 * screens 0 and 1, each observing and acting on its own display; screen 1 watched in Chromium
 * through the real proxy with noVNC; input through a view socket changes nothing; control works
 * and is revoked within a second of release. Nothing the browser saw (URLs, headers, WebSocket
 * frames) and no api response holds the sandbox's address, its traffic token or a VNC password.
 */
const SLOW = 300_000;
const ARTIFACTS = join(import.meta.dirname, "..", "artifacts");

let t: TestApi;
let proxy: RunningProxy;
let browser: Browser;
let novnc: NovncPage;
let w: World;

/** Everything a browser or an api client was handed, to search for secrets at the end. */
const seen: string[] = [];
const keep = (response: RawResponse) => {
  seen.push(response.text, JSON.stringify([...response.headers.entries()]));
  return response;
};

beforeAll(async () => {
  [browser, novnc] = await Promise.all([launchChromium(), serveNovncPage()]);
  ({ t, proxy } = await startApiAndProxy({ SANDBOX_PROVIDER: "e2b-emulator" }, novnc.origin));
  w = await buildWorld(t, "e2b-team");
}, SLOW);

afterAll(async () => {
  await proxy?.close();
  if (t) {
    for (const computer of await t.database.db.selectFrom("computers").selectAll().execute()) {
      const { provider, ref } = await machineFor(t, computer);
      await provider.destroy(ref).catch(() => undefined);
    }
    await t.close();
  }
  await browser?.close();
  await novnc?.close();
}, SLOW);

/** A page that records every URL, header and WebSocket frame it sees. */
async function watchedPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("request", async (request) => {
    seen.push(request.url(), JSON.stringify(await request.allHeaders().catch(() => ({}))));
  });
  page.on("response", async (response) => {
    seen.push(JSON.stringify(await response.allHeaders().catch(() => ({}))));
  });
  page.on("websocket", (socket) => {
    seen.push(socket.url());
    const frame = ({ payload }: { payload: string | Buffer }) =>
      seen.push(typeof payload === "string" ? payload : payload.toString("latin1"));
    socket.on("framesent", frame);
    socket.on("framereceived", frame);
  });
  await page.goto(`${novnc.origin}/`);
  await page.waitForFunction(
    () => typeof (window as unknown as { openScreen?: unknown }).openScreen === "function",
  );
  return page;
}

async function openInPage(
  page: Page,
  capability: { url: string; protocol: string; token: string },
  viewOnly: boolean,
) {
  await page.evaluate(
    ({ url, protocol, token, viewOnly }) =>
      (window as unknown as { openScreen: (...args: unknown[]) => void }).openScreen(
        url,
        protocol,
        token,
        viewOnly,
      ),
    { ...capability, viewOnly },
  );
  await page.waitForFunction(() =>
    (window as unknown as { screenEvents: { name: string }[] }).screenEvents.some(
      (e) => e.name === "connect",
    ),
  );
}

describe("a Team Computer on the E2B emulator", () => {
  it(
    "runs two bots on screens 0 and 1, shows screen 1 live through the proxy, keeps view sockets inert, revokes control within a second, and shows no E2B secret",
    async () => {
      const owner = w.people.owner;
      const robot = new SessionClient({ client: owner }, w.workspaceId);
      const [first, second] = [
        await createBot(w.people.admin, w.workspaceId),
        await createBot(w.people.admin, w.workspaceId),
      ];
      const sessions = await Promise.all([robot.opened(first.id), robot.opened(second.id)]);
      sessions.sort((a, b) => (a.screen ?? 0) - (b.screen ?? 0));
      expect(sessions.map((s) => s.screen)).toEqual([0, 1]);
      const [s0, s1] = sessions as [(typeof sessions)[0], (typeof sessions)[0]];
      expect(s0.computerId).toBe(s1.computerId);
      const computer = await t.database.db
        .selectFrom("computers")
        .selectAll()
        .where("id", "=", s0.computerId)
        .executeTakeFirstOrThrow();
      expect(computer.provider_kind).toBe("e2b-emulator");

      // each bot's commands see its own display; each observes and acts on it, at once
      const displays = await Promise.all(sessions.map((s) => robot.shell(s, { command: 'echo "$DISPLAY"' })));
      expect(displays.map((run) => run.stdout)).toEqual([":0\n", ":1\n"]);
      const spots = [
        { x: 211, y: 123 },
        { x: 377, y: 299 },
      ];
      await Promise.all(
        sessions.map(async (s, i) =>
          expectStatus(
            keep(await robot.tool(s, "POST", "/act", { actions: [{ type: "move", ...spots[i] }] })),
            200,
          ),
        ),
      );
      for (const [i, s] of sessions.entries()) {
        const shot = expectStatus(keep(await robot.observe(s)), 200);
        expect(shot.headers.get("x-screen")).toBe(String(i));
        expect([shot.headers.get("x-width"), shot.headers.get("x-height")]).toEqual(["1280", "800"]);
        expect({
          x: Number(shot.headers.get("x-cursor-x")),
          y: Number(shot.headers.get("x-cursor-y")),
        }).toEqual(spots[i]);
      }

      // screen 1, live in Chromium through the proxy
      const screenPath = `/v1/workspaces/${w.workspaceId}/computers/${computer.id}/screens/1`;
      const viewCapability = expectStatus(
        keep(await w.people.viewer.post(`${screenPath}/capabilities`, { mode: "view" })),
        201,
      ).json;
      const viewer = await watchedPage();
      // not view-only in noVNC: it sends whatever input the person makes, for the proxy to drop
      await openInPage(viewer, viewCapability, false);
      // an extra screen starts bare: the bot opens a terminal on it, and the browser shows it
      expectStatus(keep(await robot.tool(s1, "POST", "/launch-app", { app: "terminal" })), 202);
      const before = await until(
        "non-uniform pixels",
        async () => {
          const summary = await canvasSummary(viewer);
          return summary.colours > 1 ? summary : undefined;
        },
        30_000,
      );
      expect(before.fingerprint).toMatch(/^1280x800:/);
      const window = await until(
        "the terminal's window",
        async () => {
          const found = await robot.shell(s1, {
            command: "xdotool search --onlyvisible --class xterm | head -n 1",
          });
          return found.stdout.trim() || undefined;
        },
        30_000,
      );
      await robot.shell(s1, {
        command: `xdotool windowmove ${window} 100 100 windowactivate --sync ${window}`,
      });
      expectStatus(
        keep(
          await robot.tool(s1, "POST", "/act", {
            actions: [
              { type: "click", x: 150, y: 150 },
              { type: "type", text: "echo the screen changed" },
            ],
          }),
        ),
        200,
      );
      await until(
        "the screen to change in the browser",
        async () => ((await canvasSummary(viewer)).fingerprint !== before.fingerprint ? true : undefined),
        30_000,
      );

      // input through the view socket changes nothing
      const cursorOf = async () => {
        const shot = expectStatus(keep(await robot.observe(s1)), 200);
        return { x: Number(shot.headers.get("x-cursor-x")), y: Number(shot.headers.get("x-cursor-y")) };
      };
      const parked = await cursorOf();
      await viewer.mouse.move(900, 600);
      await viewer.mouse.click(901, 601);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await cursorOf(), "the pointer after input through a view socket").toEqual(parked);

      // control: the pointer follows; release closes the control socket within a second
      const lease = expectStatus(keep(await owner.post(`${screenPath}/control`)), 201).json;
      const controlCapability = expectStatus(
        keep(await owner.post(`${screenPath}/capabilities`, { mode: "control" })),
        201,
      ).json;
      const controller = await watchedPage();
      await openInPage(controller, controlCapability, false);
      await controller.mouse.move(640, 420);
      const moved = await until(
        "the pointer to follow control input",
        async () => {
          await controller.mouse.move(640, 420 + Math.round(Math.random()));
          const at = await cursorOf();
          return at.x === 640 && (at.y === 420 || at.y === 421) ? at : undefined;
        },
        15_000,
      );
      expect(moved.x).toBe(640);
      await controller.screenshot({ path: join(ARTIFACTS, "e2b-team-control.png") });

      expectStatus(keep(await owner.delete(`${screenPath}/control/${lease.leaseId}`)), 204);
      const releasedAt = (
        await t.database.db
          .selectFrom("control_leases")
          .select("released_at")
          .where("id", "=", lease.leaseId)
          .executeTakeFirstOrThrow()
      ).released_at;
      const closedAt = await controller.waitForFunction(
        () =>
          (window as unknown as { screenEvents: { name: string; at: number }[] }).screenEvents.find(
            (e) => e.name === "disconnect",
          )?.at,
        undefined,
        { timeout: 5_000 },
      );
      expect(Number(await closedAt.jsonValue()) - new Date(releasedAt as Date).getTime()).toBeLessThanOrEqual(
        1_000,
      );
      await viewer.screenshot({ path: join(ARTIFACTS, "e2b-team-view.png") });

      // the secrets, as the provider hands them to the proxy: none ever reached a browser or a client
      const { provider, ref } = await machineFor(t, computer);
      const targets: ScreenTarget[] = [await provider.openScreen(ref, 0), await provider.openScreen(ref, 1)];
      const secrets = new Set<string>([ref.providerRef as string]);
      for (const target of targets) {
        if (target.kind !== "vendor-websocket")
          throw new Error(`expected a vendor target, got ${target.kind}`);
        secrets.add(new URL(target.url).host);
        if (target.password) secrets.add(target.password);
        for (const value of Object.values(target.headers ?? {})) if (value.length >= 8) secrets.add(value);
      }
      expect(secrets.size).toBeGreaterThanOrEqual(5);
      expect(seen.length).toBeGreaterThan(50);
      for (const secret of secrets) {
        expect(
          seen.filter((text) => text.includes(secret)).map((text) => text.slice(0, 200)),
          `where ${secret} was seen`,
        ).toEqual([]);
      }
      await viewer.close();
      await controller.close();
      for (const s of sessions) expectStatus(await robot.end(s, "success"), 200);
    },
    SLOW,
  );
});
