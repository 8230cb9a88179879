import type { TestApi } from "@cubicle/api/testing/harness";
import { until } from "@cubicle/api/testing/until";
import type { ScreenTarget } from "@cubicle/providers/contract";
import type { Browser, Page } from "playwright-core";
import { expect } from "vitest";
import { WebSocket } from "ws";

/**
 * A page of the test's noVNC page (served from `pageOrigin`) that records every URL, header and
 * WebSocket frame it sees into `seen`, for the test to search for secrets at the end.
 */
export async function watchedPage(browser: Browser, pageOrigin: string, seen: string[]): Promise<Page> {
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
  await page.goto(`${pageOrigin}/`);
  // On a loaded machine one of the test page's many noVNC modules now and then fails to load, and
  // the page never defines openScreen: it is loaded again (the page is the test's, not the product's)
  for (let attempt = 1; ; attempt++) {
    try {
      await page.waitForFunction(
        () => typeof (window as unknown as { openScreen?: unknown }).openScreen === "function",
        undefined,
        { timeout: 15_000, polling: 250 },
      );
      return page;
    } catch (error) {
      if (attempt === 3) throw error;
      await page.reload();
    }
  }
}

/** Opens a screen capability (as the api mints it) in a watched page, and waits for noVNC to connect. */
export async function openInPage(
  page: Page,
  capability: { url: string; protocol: string; token: string },
  viewOnly: boolean,
): Promise<void> {
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

/**
 * What the vendor answers a WebSocket to a target: "open", the HTTP status it refused with, or
 * "error" (no answer within 15 s included).
 */
export function vendorAnswer(target: ScreenTarget): Promise<"open" | number | "error"> {
  if (target.kind !== "vendor-websocket") throw new Error(`expected a vendor target, got ${target.kind}`);
  return new Promise((resolve) => {
    const socket = new WebSocket(target.url, { headers: target.headers ?? {}, handshakeTimeout: 15_000 });
    socket.on("open", () => {
      socket.terminate();
      resolve("open");
    });
    socket.on("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? "error");
      socket.terminate();
    });
    socket.on("error", () => resolve("error"));
  });
}

/** Moves the pointer through a control page until the machine's pointer (`cursorOf`) follows it. */
export async function expectPointerFollows(
  page: Page,
  cursorOf: () => Promise<{ x: number; y: number }>,
): Promise<void> {
  await page.mouse.move(640, 420);
  const moved = await until(
    "the pointer to follow control input",
    async () => {
      await page.mouse.move(640, 420 + Math.round(Math.random()));
      const at = await cursorOf();
      return at.x === 640 && (at.y === 420 || at.y === 421) ? at : undefined;
    },
    15_000,
  );
  expect(moved.x).toBe(640);
}

/**
 * Asserts the page's screen socket closed after the control lease's release. Only the release closes
 * it (the screen outlives the lease); how fast is for bench/, so the wait is generous.
 */
export async function expectClosedOnRelease(page: Page, t: TestApi, leaseId: string): Promise<void> {
  const { released_at: releasedAt } = await t.database.db
    .selectFrom("control_leases")
    .select("released_at")
    .where("id", "=", leaseId)
    .executeTakeFirstOrThrow();
  expect(releasedAt).not.toBeNull();
  await page.waitForFunction(
    () =>
      (window as unknown as { screenEvents: { name: string }[] }).screenEvents.some(
        (e) => e.name === "disconnect",
      ),
    undefined,
    { timeout: 10_000 },
  );
}
