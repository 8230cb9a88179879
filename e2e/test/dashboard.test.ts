import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./support/browser.ts";
import { screenshotBothThemes } from "./support/dashboard.ts";
import { type Stack, startStack } from "./support/stack.ts";

/**
 * The dashboard as people use it: Debian's Chromium drives the built Next.js dashboard, which talks
 * to the real api; live screens come from real Docker computers through the real proxy.
 */
const JOURNEY_TIMEOUT_MS = 600_000;

let stack: Stack;
let browser: Browser;
const workspaceIds: string[] = [];

beforeAll(async () => {
  [stack, browser] = await Promise.all([startStack(), launchChromium()]);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close(workspaceIds);
});

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: stack.webUrl, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  return { context, page };
}

async function signUp(page: Page, person: { name: string; email: string; password: string }): Promise<void> {
  await page.goto("/sign-up");
  await page.getByLabel("Name").fill(person.name);
  await page.getByLabel("Email").fill(person.email);
  await page.getByLabel("Password").fill(person.password);
  await page.getByRole("button", { name: "Sign up" }).click();
}

describe("dashboard", () => {
  it(
    "admin journey: sign up, workspace, bots, live screen, control, checkpoint, restore, audit",
    async () => {
      const { context, page } = await newPage();
      await page.goto("/sign-up");
      await screenshotBothThemes(page, "sign-up");
      await signUp(page, { name: "Ada Admin", email: "ada@example.test", password: "correct horse battery" });
      await page.waitForURL("**/workspaces/new");
      await screenshotBothThemes(page, "new-workspace");
      await page.getByLabel("Workspace name").fill("Night shift");
      await page.getByRole("button", { name: "Create workspace" }).click();
      await page.waitForURL(/\/w\/[^/]+\/computers$/);
      const workspaceId = new URL(page.url()).pathname.split("/")[2] ?? "";
      workspaceIds.push(workspaceId);
      expect(workspaceId).not.toBe("");
      await context.close();
    },
    JOURNEY_TIMEOUT_MS,
  );
});
