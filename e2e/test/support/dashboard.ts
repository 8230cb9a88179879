import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Locator, Page } from "playwright-core";

export const ARTIFACTS = resolve(import.meta.dirname, "..", "..", "artifacts");

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
export function canvasRegion(
  screen: Locator,
  region: { x: number; y: number; width: number; height: number },
) {
  return screen.locator("canvas").evaluate((canvas: HTMLCanvasElement, r) => {
    const context = canvas.getContext("2d");
    if (!context) return "";
    const { data } = context.getImageData(r.x, r.y, r.width, r.height);
    let hash = 0;
    for (let i = 0; i < data.length; i += 4) hash = (hash * 31 + (data[i] ?? 0) + (data[i + 1] ?? 0) * 7) | 0;
    return String(hash);
  }, region);
}

/** The text a person sees in the element (Playwright's innerText: what closed dialogs hold is left out). */
export function visibleText(element: Locator): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText(), not the DOM property
  return element.innerText();
}
