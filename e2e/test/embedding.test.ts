import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createComputer, destroyMachine, machineFor } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi } from "@cubicle/api/testing/harness";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { findFreePort } from "@cubicle/db/testing";
import { launchChromium } from "@cubicle/host/testing/chromium";
import { parseProxyConfig, type RunningProxy, startProxy } from "@cubicle/proxy";
// @ts-expect-error the viewer's build script is plain JavaScript
import { buildViewer } from "@cubicle/viewer/build";
import type { Browser, Frame, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error plain JavaScript, shared with the start command
import { webServerCommand } from "../../scripts/lib/web.mjs";
import { startApiAndProxy } from "../testing/api-and-proxy.ts";
import { type EmbeddingApp, startEmbeddingApp } from "../testing/embedding-app.ts";

/**
 * Embedded live screens: a team's own app on another loopback origin shows a bot's screen with
 * `<cubicle-screen>`, its backend holding the API key and minting with @cubicle/client; the
 * dashboard's embed page does the same inside an iframe. Real api, real proxy, the desktop
 * provider's real x11vnc screen, the built dashboard, Debian's Chromium.
 */
let t: TestApi;
let proxy: RunningProxy;
let key: string;
let world: World;
let computer: Computer;
let web: ChildProcess;
let dashboardUrl: string;
let browser: Browser;
let listed: Awaited<ReturnType<typeof startEmbeddingApp>>;
let unlisted: Awaited<ReturnType<typeof startEmbeddingApp>>;
let apiKey: string;
let bundleDir: string;
const webOutput: string[] = [];

const proxyConfig = (port: number) =>
  parseProxyConfig({
    SCREEN_CAPABILITY_KEY: key,
    PROXY_PORT: String(port),
    CUBICLE_API_URL: t.api.url,
    PROXY_ALLOWED_ORIGINS: dashboardUrl,
    LOG_LEVEL: "silent",
  });

beforeAll(async () => {
  const webPort = await findFreePort();
  dashboardUrl = `http://127.0.0.1:${webPort}`;
  ({ t, proxy, key } = await startApiAndProxy({ SANDBOX_PROVIDER: "desktop" }, dashboardUrl));
  const [command, ...args] = webServerCommand(webPort, "127.0.0.1") as string[];
  web = spawn(command as string, args, {
    env: { ...process.env, NODE_ENV: "production", CUBICLE_API_URL: t.api.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  web.stdout?.on("data", (chunk: Buffer) => webOutput.push(chunk.toString()));
  web.stderr?.on("data", (chunk: Buffer) => webOutput.push(chunk.toString()));

  world = await buildWorld(t, "embedding");
  computer = await createComputer(t, world.workspaceId);
  apiKey = expectStatus(
    await world.people.owner.post(`/v1/workspaces/${world.workspaceId}/api-keys`, {
      name: "team tool",
      role: "member",
    }),
    201,
  ).json.key;
  bundleDir = mkdtempSync(join(tmpdir(), "cubicle-viewer-"));
  const bundle: string = await buildViewer({ outdir: bundleDir });
  const app = (bindToOrigin: boolean) =>
    startEmbeddingApp({
      apiUrl: t.api.url,
      apiKey,
      workspaceId: world.workspaceId,
      computerId: computer.id,
      dashboardUrl,
      bundle,
      bindToOrigin,
    });
  [listed, unlisted] = await Promise.all([app(true), app(false)]);
  expectStatus(
    await world.people.admin.put(`/v1/workspaces/${world.workspaceId}/embed-origins`, {
      origins: [listed.origin],
    }),
    200,
  );
  browser = await launchChromium();
  await until(
    async () => (await fetch(`${dashboardUrl}/health`).catch(() => undefined))?.ok === true,
    60_000,
  );
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([listed?.close(), unlisted?.close()]);
  web?.kill();
  await proxy?.close();
  if (computer) await destroyMachine(t, computer);
  await t?.close();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
});

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not in time: ${condition.toString()}\n${webOutput.join("")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What a page shows and sends that a token or key could hide in. */
interface Watched {
  page: Page;
  urls: string[];
  console: string[];
}

async function watched(): Promise<Watched> {
  const page = await browser.newPage({ viewport: { width: 1300, height: 820 } });
  const seen: Watched = { page, urls: [], console: [] };
  page.on("request", (request) => seen.urls.push(request.url()));
  page.on("websocket", (socket) => seen.urls.push(socket.url()));
  page.on("framenavigated", (frame) => seen.urls.push(frame.url()));
  page.on("console", (message) => seen.console.push(message.text()));
  page.on("pageerror", (error) => seen.console.push(error.message));
  return seen;
}

/** Every secret the app held: the key and each token it minted appear nowhere on the page. */
async function expectNoSecrets(seen: Watched, app: EmbeddingApp, frame?: Frame) {
  const documents = [await seen.page.content(), (await frame?.content()) ?? ""];
  const attributes = async (where: Page | Frame) =>
    where.evaluate(() =>
      [...document.querySelectorAll("*")].flatMap((element) => [...element.attributes].map((a) => a.value)),
    );
  const values = [...(await attributes(seen.page)), ...(frame ? await attributes(frame) : [])];
  expect(app.tokens.length).toBeGreaterThan(0);
  for (const secret of [apiKey, ...app.tokens]) {
    for (const text of [...documents, ...values, ...seen.urls, ...seen.console])
      expect(text.includes(secret), `a secret showed up in: ${text.slice(0, 200)}`).toBe(false);
  }
}

/** Distinct colours on the screen's canvas: a live desktop has many, a blank one has one. */
const canvasColours = (where: Page | Frame) =>
  where.evaluate(() => {
    const canvas = document.querySelector("cubicle-screen canvas") as HTMLCanvasElement | null;
    const context = canvas?.getContext("2d");
    if (!canvas || !context || canvas.width === 0) return 0;
    const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < data.length; i += 4 * 31)
      seen.add(((data[i] ?? 0) << 16) | ((data[i + 1] ?? 0) << 8) | (data[i + 2] ?? 0));
    return seen.size;
  });

const stateOf = (page: Page) => page.getAttribute("cubicle-screen", "data-state");
const statusText = (page: Page) => page.textContent("cubicle-screen [role=status]");
const events = (page: Page) =>
  page.evaluate(
    () =>
      (window as unknown as { events: Array<{ name: string; detail: Record<string, unknown>; at: number }> })
        .events,
  );

async function refusals(reason: string): Promise<number> {
  const text = await proxy.metrics.registry.getSingleMetricAsString("cubicle_proxy_refusals_total");
  const match = new RegExp(`reason="${reason}"\\} (\\d+)`).exec(text);
  return match ? Number(match[1]) : 0;
}

let app: Watched;

describe("an embedded live screen", () => {
  it("shows the live screen on a listed origin with no token or key on the page, and is refused on another", async () => {
    app = await watched();
    await app.page.goto(`${listed.origin}/`);
    await app.page.waitForSelector('cubicle-screen[data-state="view-only"]', { timeout: 30_000 });
    await until(async () => (await canvasColours(app.page)) > 1);
    expect(await statusText(app.page)).toBe("View only");
    await expectNoSecrets(app, listed);

    const before = await refusals("origin");
    const elsewhere = await watched();
    await elsewhere.page.goto(`${unlisted.origin}/`);
    await elsewhere.page.waitForSelector('cubicle-screen[data-state="refused"]', { timeout: 30_000 });
    expect(await statusText(elsewhere.page)).toBe("This screen could not be opened here");
    // every attempt was a fresh capability, and the proxy refused each for its origin
    expect(await refusals("origin")).toBe(before + unlisted.tokens.length);
    expect(new Set(unlisted.tokens).size).toBe(unlisted.tokens.length);
    await expectNoSecrets(elsewhere, unlisted);
    await elsewhere.page.close();
  });

  it("works as the dashboard's iframe through postMessage, and is refused as a frame by an unlisted site", async () => {
    const framed = await watched();
    await framed.page.goto(`${listed.origin}/frame`);
    const frameOf = () => framed.page.frames().find((frame) => frame.url().startsWith(dashboardUrl));
    await until(() => frameOf() !== undefined, 30_000);
    const frame = frameOf() as Frame;
    await frame.waitForSelector('cubicle-screen[data-state="view-only"]', { timeout: 30_000 });
    await until(async () => (await canvasColours(frame)) > 1);
    expect(listed.frameRequests).toBeGreaterThan(0);
    const forwarded = await framed.page.evaluate(
      () =>
        (window as unknown as { frameEvents: Array<{ name: string; detail: { state?: string } }> })
          .frameEvents,
    );
    expect(forwarded.some((event) => event.name === "state" && event.detail.state === "view-only")).toBe(
      true,
    );
    // the capability crossed by postMessage only: never in the frame's address
    expect(frame.url()).toBe(`${dashboardUrl}/embed/screen/${world.workspaceId}`);
    await expectNoSecrets(framed, listed, frame);
    await framed.page.close();

    const blocked = await watched();
    const embedPage = blocked.page.waitForResponse((response) =>
      response.url().startsWith(`${dashboardUrl}/embed/screen/`),
    );
    // `load` waits for the frame too, whether it loaded or the browser refused it
    await blocked.page.goto(`${unlisted.origin}/frame`);
    expect((await embedPage).headers()["content-security-policy"]).toBe(`frame-ancestors ${listed.origin}`);
    expect(unlisted.frameRequests).toBe(0);
    for (const frame of blocked.page.frames().filter((one) => one !== blocked.page.mainFrame()))
      expect(await frame.content()).not.toContain("cubicle-screen");
    await blocked.page.close();
  });

  it("reconnects with a fresh capability within 5 s when the proxy restarts, never retrying a used one", async () => {
    const minted = listed.tokens.length;
    const dropped = Date.now();
    const port = proxy.port;
    await proxy.close();
    proxy = await startProxy(proxyConfig(port));
    await until(async () =>
      (await events(app.page)).some(
        (event) => event.at > dropped && event.name === "state" && event.detail.state === "view-only",
      ),
    );
    const back = (await events(app.page)).find(
      (event) => event.at > dropped && event.name === "state" && event.detail.state === "view-only",
    );
    expect((back?.at ?? Number.POSITIVE_INFINITY) - dropped).toBeLessThan(5_000);
    expect(listed.tokens.length).toBeGreaterThan(minted);
    expect(new Set(listed.tokens).size).toBe(listed.tokens.length);
    expect(await refusals("replayed")).toBe(0);
    await until(async () => (await canvasColours(app.page)) > 1);
    await expectNoSecrets(app, listed);
  });

  it("types into the computer under the backend's control lease, and says so within a second of release", async () => {
    await listed.takeControl();
    await app.page.goto(`${listed.origin}/?mode=control`);
    await app.page.waitForSelector('cubicle-screen[data-state="live"]', { timeout: 30_000 });
    expect(await statusText(app.page)).toBe("Live: you control this screen");
    expect((await events(app.page)).some((event) => event.name === "lease")).toBe(true);

    // the xterm of the desktop provider's screen sits under (120, 140); the element shows it 1:1
    const box = await app.page.locator("cubicle-screen canvas").boundingBox();
    if (!box) throw new Error("no canvas");
    await app.page.mouse.click(box.x + 120, box.y + 140);
    const file = `embedded-${Date.now()}`;
    await app.page.keyboard.type(`touch ${file}`);
    await app.page.keyboard.press("Enter");
    const { provider, ref } = await machineFor(t, computer);
    await until(async () => (await provider.listFiles(ref, "")).some((entry) => entry.name === file));

    const released = Date.now();
    await listed.releaseControl();
    await app.page.waitForSelector('cubicle-screen[data-state="ended"]', { timeout: 5_000 });
    const ended = (await events(app.page)).find((event) => event.name === "control-ended");
    expect(ended).toBeDefined();
    expect((ended?.at ?? Number.POSITIVE_INFINITY) - released).toBeLessThan(1_000);
    expect(await statusText(app.page)).toBe("Control ended");
    expect(await stateOf(app.page)).toBe("ended");
    await expectNoSecrets(app, listed);
  });
});
