import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchChromium } from "@cubicle/host/testing/chromium";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";
import { ARTIFACTS } from "./dashboard.ts";
import { type Stack, startStack } from "./stack.ts";

/** How long one journey (a test) may take. */
export const JOURNEY_TIMEOUT_MS = 600_000;

/** A person at the dashboard: their own browser context (cookies, permissions) and page. */
export interface Person {
  context: BrowserContext;
  page: Page;
}

/** What a file's journeys share; filled in before its first test. */
export interface Journeys {
  /** The real deployment: dashboard, api, proxy and Docker computers. */
  stack: Stack;
  /** The admin's page, opened with the file's context options. */
  admin: Person;
  /** Someone else at the dashboard, in a fresh context (the journeys' viewport, no extra options). */
  newPerson(): Promise<Person>;
}

/**
 * Sets a dashboard test file up: before its tests the stack and Debian's Chromium start and the
 * admin's page opens; after them the browser closes and the stack goes, with the workspace the
 * journeys made (`workspaceId()`, "" when none). When a test fails, what the admin saw is saved
 * to ARTIFACTS as `<failure(test name)>.png` and, with `log`, the services' output as `….log`,
 * for whoever reads the run.
 */
export function setUpJourneys(options: {
  workspaceId: () => string;
  failure: (testName: string) => string;
  log?: boolean;
  context?: BrowserContextOptions;
}): Journeys {
  const journeys = {} as Journeys;
  let browser: Browser;

  async function open(extra: BrowserContextOptions = {}): Promise<Person> {
    const context = await browser.newContext({
      baseURL: journeys.stack.webUrl,
      viewport: { width: 1280, height: 900 },
      ...extra,
    });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    return { context, page };
  }
  journeys.newPerson = () => open();

  beforeAll(async () => {
    [journeys.stack, browser] = await Promise.all([startStack(), launchChromium()]);
    journeys.admin = await open(options.context);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    const workspaceId = options.workspaceId();
    await journeys.stack?.close(workspaceId ? [workspaceId] : []);
  });

  afterEach(async ({ task }) => {
    if (task.result?.state !== "fail") return;
    const name = options.failure(task.name);
    await journeys.admin?.page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    if (options.log && journeys.stack) writeFileSync(join(ARTIFACTS, `${name}.log`), journeys.stack.output());
  });

  return journeys;
}
