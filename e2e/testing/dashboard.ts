import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Locator, Page } from "playwright-core";
import { PNG } from "pngjs";
import { expect } from "vitest";

export const ARTIFACTS = resolve(import.meta.dirname, "..", "artifacts");

export const PASSWORD = "correct horse battery";
// Screen 0 of a Docker computer: an xterm at the top left, Chromium beside it (see computer-image).
export const XTERM_POINT = { x: 100, y: 150 };
export const XTERM_REGION = { x: 2, y: 22, width: 224, height: 120 };

export async function signUp(page: Page, person: { name: string; email: string }): Promise<void> {
  await page.goto("/sign-up");
  await page.getByLabel("Name").fill(person.name);
  await page.getByLabel("Email").fill(person.email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign up" }).click();
}

/** Creates a bot with the bots page's form (the page must be open) and waits until it is listed. */
export async function createBot(page: Page, bot: { name: string; mode: "Team" | "Private"; why?: string }) {
  await page.getByLabel("Name", { exact: true }).fill(bot.name);
  await page.getByLabel("What it does").fill(`${bot.name} files the night shift's reports`);
  await page.getByLabel("Boundary it never crosses").fill("Never pays anyone");
  await page.getByRole("radio", { name: bot.mode }).check();
  if (bot.why) await page.getByLabel("Why it is private").fill(bot.why);
  await page.getByRole("button", { name: "Create bot" }).click();
  const list = page.getByRole("table", { name: "All bots" });
  await expect.poll(() => list.getByText(bot.name, { exact: true }).count(), { timeout: 15_000 }).toBe(1);
}

export async function openTeamComputer(page: Page, workspaceId: string): Promise<void> {
  await page.goto(`/w/${workspaceId}/computers`);
  await page.getByRole("link", { name: "Team Computer" }).first().click();
  await page.waitForURL(/\/computers\/[^/]+$/);
}

/** A titled part of a page (its h2). */
export const section = (page: Page, title: string) =>
  page.locator("section", { has: page.getByRole("heading", { level: 2, name: title, exact: true }) });

export const mainScreen = (page: Page) => page.getByTestId("main-screen");

/** Waits until a live screen is connected in this mode and shows a real picture. */
export async function waitForLive(screen: Locator, mode: "view" | "control"): Promise<void> {
  await expect
    .poll(
      async () => `${await screen.getAttribute("data-status")}/${await screen.getAttribute("data-mode")}`,
      {
        timeout: 60_000,
      },
    )
    .toBe(`connected/${mode}`);
  await expect.poll(() => distinctCanvasColors(screen), { timeout: 30_000 }).toBeGreaterThan(8);
}

/** Clicks a point of the remote screen (in its own pixels) on the scaled canvas. */
export async function clickRemote(screen: Locator, point: { x: number; y: number }): Promise<void> {
  const canvas = screen.locator("canvas");
  const box = await canvas.boundingBox();
  const size = await canvas.evaluate((c: HTMLCanvasElement) => ({ width: c.width, height: c.height }));
  if (!box) throw new Error("the live screen has no canvas on the page");
  await canvas.click({
    position: { x: (point.x * box.width) / size.width, y: (point.y * box.height) / size.height },
  });
}

/** Saves what the person sees on this page, in the light and the dark theme (e2e/artifacts/<name>-<theme>.png). */
export async function screenshotBothThemes(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${colorScheme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

/** How many distinct colours the live screen's canvas shows (1 for a blank or uniform screen). */
export function distinctCanvasColors(screen: Locator): Promise<number> {
  return screen.locator("canvas").evaluate((canvas: HTMLCanvasElement) => {
    const context = canvas.getContext("2d");
    if (!context || canvas.width === 0) return 0;
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    const colors = new Set<number>();
    for (let i = 0; i < data.length && colors.size < 256; i += 4 * 7)
      colors.add(((data[i] ?? 0) << 16) | ((data[i + 1] ?? 0) << 8) | (data[i + 2] ?? 0));
    return colors.size;
  });
}

/** A fingerprint of a region of the live screen's canvas (in canvas pixels), to tell frames apart. */
export async function canvasRegion(
  screen: Locator,
  region: { x: number; y: number; width: number; height: number },
): Promise<string> {
  const rgba = await screen.locator("canvas").evaluate((canvas: HTMLCanvasElement, r) => {
    const context = canvas.getContext("2d");
    return context ? Array.from(context.getImageData(r.x, r.y, r.width, r.height).data) : [];
  }, region);
  return hashPixels(rgba);
}

/** The same region of a PNG (a frame the api decoded), hashed as canvasRegion hashes a canvas's. */
export function pngRegion(
  png: Buffer,
  region: { x: number; y: number; width: number; height: number },
): string {
  const image = PNG.sync.read(png);
  const rgba: number[] = [];
  for (let y = region.y; y < region.y + region.height; y++) {
    const start = (y * image.width + region.x) * 4;
    rgba.push(...image.data.subarray(start, start + region.width * 4));
  }
  return hashPixels(rgba);
}

/** A short fingerprint of RGBA pixels: equal pictures give equal strings. */
function hashPixels(rgba: ArrayLike<number>): string {
  if (rgba.length === 0) return "";
  let hash = 0;
  for (let i = 0; i < rgba.length; i += 4) hash = (hash * 31 + (rgba[i] ?? 0) + (rgba[i + 1] ?? 0) * 7) | 0;
  return String(hash);
}

/** The text a person sees in the element (Playwright's innerText: what closed dialogs hold is left out). */
export function visibleText(element: Locator): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText(), not the DOM property
  return element.innerText();
}
