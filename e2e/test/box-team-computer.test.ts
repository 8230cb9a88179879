import { join } from "node:path";
import { destroyMachines, machineFor } from "@cubicle/api/testing/computers";
import { expectStatus, type RawResponse, type TestApi } from "@cubicle/api/testing/harness";
import { createBot, type OpenedSession, problem, SessionClient } from "@cubicle/api/testing/sessions";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { launchChromium } from "@cubicle/host/testing/chromium";
import type { RunningProxy } from "@cubicle/proxy";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startApiAndProxy } from "../testing/api-and-proxy.ts";
import { canvasSummary } from "../testing/canvas.ts";
import { type NovncPage, serveNovncPage } from "../testing/novnc-page.ts";
import {
  expectClosedOnRelease,
  expectPointerFollows,
  openInPage,
  vendorAnswer,
  watchedPage as watchedPageOf,
} from "../testing/screen-pages.ts";

/**
 * A Team Computer on `box-emulator` (the real box adapter against the loopback Box emulator inside
 * the api; each box a real desktop in Docker). A box has one desktop, so the first bot's session
 * gets screen 0 and observes and acts there, while a second bot's session gets no screen: its
 * graphical tools answer MULTI_SCREEN_UNAVAILABLE, its shell and files work. Screen 0 is watched in
 * Chromium through the real proxy with noVNC: the view socket shows the desktop changing and lets
 * no input through; control moves the pointer and is revoked on release. Once the
 * first bot is done, the second gets screen 0 by opening a new session. After a stop (archive) and
 * a start (resume) Box's desktop token of the last start is refused and screen 0 works with the new
 * one. Nothing the browser saw, no api response and no log line of the api or the proxy (both at
 * debug level) holds the desktop token, the VNC password or the box's desktop address.
 */
const SLOW = 420_000;
const ARTIFACTS = join(import.meta.dirname, "..", "artifacts");
const KIND = "box-emulator";

let t: TestApi;
let proxy: RunningProxy;
let browser: Browser;
let novnc: NovncPage;
let w: World;
/** Every line the api and the proxy logged. */
const logs: string[] = [];

/** Where the journey is, said when it fails (a hang is otherwise only "timed out"). */
let stage = "starting";

/** Everything a browser or an api client was handed, to search for secrets at the end. */
const seen: string[] = [];
const keep = (response: RawResponse) => {
  seen.push(response.text, JSON.stringify([...response.headers.entries()]));
  return response;
};

/** A page that records every URL, header and WebSocket frame it sees. */
const watchedPage = () => watchedPageOf(browser, novnc.origin, seen);

beforeAll(async () => {
  [browser, novnc] = await Promise.all([launchChromium(), serveNovncPage()]);
  // the bots' sessions stay open for most of the journey without heartbeats (leases are not what
  // this test is about), which can outlast the default minute on a loaded machine
  ({ t, proxy } = await startApiAndProxy(
    { SANDBOX_PROVIDER: KIND, SESSION_LEASE_MS: "600000" },
    novnc.origin,
    {
      logs,
    },
  ));
  w = await buildWorld(t, "box-team");
}, SLOW);

afterAll(async () => {
  await proxy?.close();
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await browser?.close();
  await novnc?.close();
}, SLOW);

afterEach(({ task }) => {
  if (task.result?.state === "fail") console.error(`the journey failed while ${stage}`);
});

/**
 * Box's secrets in the target of screen 0, as the provider hands it to the proxy now: the desktop
 * token (`_token`), the VNC password and the box's desktop address.
 */
async function boxSecrets(computer: Computer) {
  const { provider, ref } = await machineFor(t, computer);
  const target = await provider.openScreen(ref, 0);
  if (target.kind !== "vendor-websocket") throw new Error(`expected a vendor target, got ${target.kind}`);
  const url = new URL(target.url);
  const token = url.searchParams.get("_token") ?? "";
  const password = target.password ?? "";
  expect(token.length, "the desktop token's length").toBeGreaterThanOrEqual(8);
  expect(password.length, "the VNC password's length").toBeGreaterThanOrEqual(6);
  const boxId = ref.providerRef as string;
  expect(url.pathname).toBe(`/desktop/${boxId}/websockify`);
  return { target, token, password, boxId, desktop: `/desktop/${boxId}` };
}

/** The canvas once it has stopped changing (two looks half a second apart agree), or after 10 s. */
async function settledCanvas(page: Page) {
  let last = await canvasSummary(page);
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await canvasSummary(page);
    if (now.fingerprint === last.fingerprint) return now;
    last = now;
  }
  return last;
}

describe("a Team Computer on box-emulator (one desktop)", () => {
  it(
    "gives the first bot screen 0 and the second none, shows screen 0 live through the proxy, keeps view sockets inert, revokes control on release, hands screen 0 on, works again after a stop and a start with Box's new token, and shows or logs no Box secret",
    async () => {
      seen.length = 0;
      stage = "opening two bots' sessions";
      const owner = w.people.owner;
      const robot = new SessionClient({ client: owner }, w.workspaceId);
      const [first, second] = [
        await createBot(w.people.admin, w.workspaceId),
        await createBot(w.people.admin, w.workspaceId),
      ];
      const s0 = await robot.opened(first.id);
      const s1 = await robot.opened(second.id);
      expect([s0.screen, s1.screen], "the screens of the first and the second bot").toEqual([0, null]);
      expect(s1.computerId).toBe(s0.computerId);
      const computerOf = () =>
        t.database.db
          .selectFrom("computers")
          .selectAll()
          .where("id", "=", s0.computerId)
          .executeTakeFirstOrThrow();
      const computer = await computerOf();
      expect(computer.provider_kind).toBe(KIND);
      const firstStart = await boxSecrets(computer);

      const cursorOf = async (s: OpenedSession) => {
        const shot = expectStatus(keep(await robot.observe(s)), 200);
        return { x: Number(shot.headers.get("x-cursor-x")), y: Number(shot.headers.get("x-cursor-y")) };
      };

      stage = "observing and acting with the first bot";
      expect((await robot.shell(s0, { command: 'echo "$DISPLAY"' })).stdout).toBe(":0\n");
      expectStatus(
        keep(await robot.tool(s0, "POST", "/act", { actions: [{ type: "move", x: 211, y: 123 }] })),
        200,
      );
      const raw = await owner.fetch("POST", robot.pathOf(s0, "/observe"), {
        headers: { "x-session-fence": String(s0.fence) },
      });
      seen.push(JSON.stringify([...raw.headers.entries()]));
      expect(raw.status).toBe(200);
      expect(raw.headers.get("content-type")).toBe("image/png");
      expect(raw.headers.get("x-screen")).toBe("0");
      expect([raw.headers.get("x-width"), raw.headers.get("x-height")]).toEqual(["1280", "800"]);
      expect({ x: Number(raw.headers.get("x-cursor-x")), y: Number(raw.headers.get("x-cursor-y")) }).toEqual({
        x: 211,
        y: 123,
      });
      const png = Buffer.from(await raw.arrayBuffer());
      expect([...png.subarray(0, 8)], "the PNG signature").toEqual([
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a,
      ]);
      expect(png.toString("latin1", 12, 16)).toBe("IHDR");
      expect([png.readUInt32BE(16), png.readUInt32BE(20)], "the PNG's width and height").toEqual([1280, 800]);

      stage = "working with the second bot, which has no screen";
      problem(keep(await robot.observe(s1)), 409, "MULTI_SCREEN_UNAVAILABLE");
      problem(
        keep(await robot.tool(s1, "POST", "/act", { actions: [{ type: "move", x: 5, y: 5 }] })),
        409,
        "MULTI_SCREEN_UNAVAILABLE",
      );
      const run = await robot.shell(s1, { command: "echo works without a screen; pwd" });
      keep(run.response);
      expect(run.exit).toMatchObject({ code: 0 });
      expect(run.stdout).toBe(`works without a screen\n/home/user/cubicle-home/bots/${second.id}\n`);
      expectStatus(keep(await robot.write(s1, "notes.txt", "written without a screen")), 204);
      expect(expectStatus(keep(await robot.read(s1, "notes.txt")), 200).text).toBe(
        "written without a screen",
      );

      // screen 0, live in Chromium through the proxy
      stage = "viewing screen 0 while the first bot types into a terminal";
      const screenPath = `/v1/workspaces/${w.workspaceId}/computers/${computer.id}/screens/0`;
      const viewer = await watchedPage();
      // not view-only in noVNC: it sends whatever input the person makes, for the proxy to drop
      await openInPage(
        viewer,
        expectStatus(keep(await w.people.viewer.post(`${screenPath}/capabilities`, { mode: "view" })), 201)
          .json,
        false,
      );
      await until(
        "the desktop's 1280x800 pixels in the browser",
        async () => {
          const summary = await canvasSummary(viewer);
          return summary.fingerprint.startsWith("1280x800:") && summary.colours > 1 ? summary : undefined;
        },
        30_000,
      );
      expectStatus(keep(await robot.tool(s0, "POST", "/launch-app", { app: "terminal" })), 202);
      const terminal = await until(
        "the terminal's window",
        async () => {
          const found = await robot.shell(s0, {
            command: "xdotool search --onlyvisible --class xterm | head -n 1",
          });
          return found.stdout.trim() || undefined;
        },
        30_000,
      );
      await robot.shell(s0, {
        command: `xdotool windowmove ${terminal} 100 100 windowactivate --sync ${terminal}`,
      });
      expectStatus(
        keep(await robot.tool(s0, "POST", "/act", { actions: [{ type: "click", x: 150, y: 150 }] })),
        200,
      );
      // the terminal is up and focused: only the typing changes the screen from here
      const before = await settledCanvas(viewer);
      expect(before.fingerprint).toMatch(/^1280x800:/);
      expectStatus(
        keep(
          await robot.tool(s0, "POST", "/act", {
            actions: [{ type: "type", text: "echo the screen changed" }],
          }),
        ),
        200,
      );
      await until(
        "the screen to change in the browser",
        async () => ((await canvasSummary(viewer)).fingerprint !== before.fingerprint ? true : undefined),
        30_000,
      );

      stage = "sending input through the view socket";
      const parked = await cursorOf(s0);
      await viewer.mouse.move(900, 600);
      await viewer.mouse.click(901, 601);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await cursorOf(s0), "the pointer after input through a view socket").toEqual(parked);

      stage = "controlling screen 0";
      const lease = expectStatus(keep(await owner.post(`${screenPath}/control`)), 201).json;
      const controller = await watchedPage();
      await openInPage(
        controller,
        expectStatus(keep(await owner.post(`${screenPath}/capabilities`, { mode: "control" })), 201).json,
        false,
      );
      await expectPointerFollows(controller, () => cursorOf(s0));
      await controller.screenshot({ path: join(ARTIFACTS, `${KIND}-team-control.png`) });

      stage = "releasing control";
      expectStatus(keep(await owner.delete(`${screenPath}/control/${lease.leaseId}`)), 204);
      await expectClosedOnRelease(controller, t, lease.leaseId);
      await viewer.screenshot({ path: join(ARTIFACTS, `${KIND}-team-view.png`) });
      await viewer.close();
      await controller.close();

      // the one screen goes to the second bot once the first is done and it opens a new session
      stage = "handing screen 0 to the second bot";
      expectStatus(keep(await robot.end(s0, "success")), 200);
      expectStatus(keep(await robot.end(s1, "success")), 200);
      const s1again = await robot.opened(second.id);
      expect(s1again.screen, "the second bot's screen in its new session").toBe(0);
      expect(s1again.computerId).toBe(computer.id);
      const handedOn = expectStatus(keep(await robot.observe(s1again)), 200);
      expect(handedOn.headers.get("x-screen")).toBe("0");
      expect([handedOn.headers.get("x-width"), handedOn.headers.get("x-height")]).toEqual(["1280", "800"]);

      stage = "reading the target before the stop";
      const lastStart = await boxSecrets(computer);
      expectStatus(keep(await robot.end(s1again, "success")), 200);

      // a stop (Box archives the box) and a start (Box resumes it, with a new desktop token)
      const computerPath = `/v1/workspaces/${w.workspaceId}/computers/${computer.id}`;
      stage = "stopping the computer";
      expectStatus(keep(await owner.post(`${computerPath}/stop`)), 200);
      stage = "starting the computer";
      expectStatus(keep(await owner.post(`${computerPath}/start`)), 200);
      stage = "asking Box about the target of the last start";
      expect(await vendorAnswer(lastStart.target), "Box, to a desktop token of the last start").toBe(403);

      stage = "viewing screen 0 after the start";
      const again = await watchedPage();
      await openInPage(
        again,
        expectStatus(keep(await w.people.viewer.post(`${screenPath}/capabilities`, { mode: "view" })), 201)
          .json,
        true,
      );
      const restarted = await until(
        "the screen's frame after the start",
        async () => {
          const summary = await canvasSummary(again);
          return summary.fingerprint.startsWith("1280x800:") ? summary : undefined;
        },
        30_000,
      );
      expect(restarted.fingerprint).toMatch(/^1280x800:/);
      await again.screenshot({ path: join(ARTIFACTS, `${KIND}-team-restarted.png`) });
      await again.close();
      stage = "reading the target after the start";
      const newStart = await boxSecrets(computer);
      expect(newStart.token, "the desktop token after the start").not.toBe(lastStart.token);
      expect(newStart.boxId).toBe(lastStart.boxId);

      stage = "looking for Box's secrets";
      const starts = [firstStart, lastStart, newStart];
      // what is secret in Box's answers: the desktop token and VNC password of each start, and
      // the box's desktop address (which only Box's answers and the sealed target hold)
      const secrets = new Set(starts.flatMap((s) => [s.token, s.password, s.desktop]));
      expect(secrets.size).toBeGreaterThanOrEqual(5);
      expect(seen.length).toBeGreaterThan(50);
      // none reached a browser or a client, and neither did the box's id
      for (const secret of [...secrets, newStart.boxId]) {
        expect(
          seen.filter((text) => text.includes(secret)).map((text) => text.slice(0, 200)),
          `where ${secret} was seen`,
        ).toEqual([]);
      }
      // both processes logged the whole journey long, at debug level (a health check logs at debug)
      expectStatus(keep(await t.client().get("/health")), 200);
      const lines = logs.map((line) => JSON.parse(line) as { service: string; level: number; msg: string });
      expect(lines.filter((l) => l.service === "api" && l.msg === "request").length).toBeGreaterThan(50);
      expect(lines.some((l) => l.service === "api" && l.level === 20)).toBe(true);
      expect(lines.some((l) => l.service === "proxy" && l.msg === "screen socket ended")).toBe(true);
      for (const secret of secrets) {
        expect(
          logs.filter((line) => line.includes(secret)).map((line) => line.slice(0, 300)),
          `log lines holding ${secret}`,
        ).toEqual([]);
      }
    },
    SLOW,
  );
});
