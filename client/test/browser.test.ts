import { launchChromium } from "@cubicle/host/testing/chromium";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type * as Library from "../src/index.ts";
import { servePageWithClient } from "../testing/browser-page.ts";
import { deployment, makeBot } from "../testing/index.ts";

declare global {
  interface Window {
    cubicle: typeof Library;
  }
}

const SLOW = 240_000;
let page: Awaited<ReturnType<typeof servePageWithClient>>;
let browser: Awaited<ReturnType<typeof launchChromium>>;

beforeAll(async () => {
  page = await servePageWithClient(deployment().url);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await page?.close();
});

describe("the library in a browser (Debian's Chromium)", () => {
  it("opens a session, runs a command, observes, moves a file, follows events and ends", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("Browser");
    const tab = await browser.newPage();
    await tab.goto(page.url);
    await tab.waitForFunction(() => document.title === "ready");
    const seen = await tab.evaluate(
      async ({ apiKey, botName, botId }) => {
        const { Cubicle } = window.cubicle;
        const client = new Cubicle({ url: location.origin, apiKey });
        const abort = new AbortController();
        const types: string[] = [];
        let following!: () => void;
        const ready = new Promise<void>((resolve) => {
          following = resolve;
        });
        const events = (async () => {
          for await (const event of client.events({ signal: abort.signal, onReady: following })) {
            // the workspace is shared with other suites running at the same time: only this bot's
            if (event.data.botId !== botId) continue;
            types.push(event.type);
            if (event.type === "session.ended") abort.abort();
          }
        })();
        await ready;
        const session = await client.openSession(botName);
        const run = await session.run("echo from the browser; exit 5");
        const shot = await session.observe();
        const signature = Array.from(shot.png.subarray(1, 4), (byte) => String.fromCharCode(byte)).join("");
        await session.writeFile("browser/note.txt", "written by a page");
        const read = await new Response(await session.downloadFile("browser/note.txt")).text();
        await session.end();
        await events;
        return { run, size: [shot.width, shot.height], signature, read, types };
      },
      { apiKey: deployment().memberKey, botName: bot.name, botId: bot.id },
    );
    expect(seen.run).toEqual({ stdout: "from the browser\n", stderr: "", code: 5, truncated: false });
    expect(seen).toMatchObject({ size: [1280, 800], signature: "PNG", read: "written by a page" });
    expect(seen.types).toEqual(expect.arrayContaining(["session.opened", "session.ended"]));
    expect(seen.types.indexOf("session.opened")).toBeLessThan(seen.types.indexOf("session.ended"));
  });
});
