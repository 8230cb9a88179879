import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { RECORDING_FILE_MAGIC } from "@cubicle/proxy/recording";
import type { Locator, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import {
  canvasRegion,
  clickRemote,
  createBot,
  mainScreen,
  openTeamComputer,
  pngRegion,
  screenshotBothThemes,
  section,
  signUp,
  visibleText,
  waitForLive,
  XTERM_POINT,
  XTERM_REGION,
} from "../testing/dashboard.ts";
import { JOURNEY_TIMEOUT_MS, setUpJourneys } from "../testing/journey.ts";

/**
 * Recording and replay as an admin uses them, on the real stack (dashboard, api, proxy, a Docker
 * computer): the workspace records take-overs; a take-over in the dashboard types into the xterm;
 * its recording is complete and replays in the dashboard's player to the very picture the person
 * saw at release, seeks (from the timeline, an input row, a link's ?at=), downloads and exports.
 */
const TYPED = "echo recorded-by-cubicle";

let page: Page;
let workspaceId = "";

const journeys = setUpJourneys({
  workspaceId: () => workspaceId,
  failure: () => "failed-recordings",
  log: true,
  context: { acceptDownloads: true },
});
beforeAll(() => {
  page = journeys.admin.page;
});

const player = () => page.getByTestId("recording-player");

/** Waits until the player has the whole recording and is not bringing the picture anywhere. */
async function settled(): Promise<void> {
  await expect
    .poll(
      async () =>
        `${await player().getAttribute("data-loading")}/${await player().getAttribute("data-seeking")}`,
      {
        timeout: 60_000,
      },
    )
    .toBe("false/false");
}

const position = async () => Number(await player().getAttribute("data-position"));

/** The region of a screen once it stopped changing (the xterm after the echo printed). */
async function steadyRegion(screen: Locator): Promise<string> {
  let last = "";
  for (let tries = 0; tries < 30; tries++) {
    const now = await canvasRegion(screen, XTERM_REGION);
    if (now === last) return now;
    last = now;
    await page.waitForTimeout(1_000);
  }
  throw new Error("the screen's xterm kept changing");
}

describe("recordings in the dashboard", () => {
  it(
    "a take-over is recorded, listed complete, replayed to the picture at release, sought, downloaded and exported",
    async () => {
      await signUp(page, { name: "Rhea Recorder", email: "rhea@example.test" });
      await page.waitForURL("**/workspaces/new");
      await page.getByLabel("Workspace name").fill("Recorded shift");
      await page.getByRole("button", { name: "Create workspace" }).click();
      await page.waitForURL(/\/w\/[^/]+\/computers$/);
      workspaceId = new URL(page.url()).pathname.split("/")[2] ?? "";

      // the policy, through the settings form: take-overs are recorded
      await page.goto(`/w/${workspaceId}/settings`);
      const policy = section(page, "Screen recording");
      await expect.poll(() => visibleText(policy)).toContain("Now: Off");
      await policy.getByRole("radio", { name: "Take-overs", exact: true }).check();
      await policy.getByLabel("Keep recordings for (days)").fill("30");
      await policy.getByRole("button", { name: "Save recording policy" }).click();
      await expect.poll(() => visibleText(policy), { timeout: 15_000 }).toContain("Now: Take-overs");
      expect(await visibleText(policy)).toContain("kept 30 days");
      await screenshotBothThemes(page, "recording-policy");

      // a take-over of a Team bot's computer's screen: marked as recorded while it lasts
      await page.goto(`/w/${workspaceId}/bots`);
      await createBot(page, { name: "Scout", mode: "Team" });
      await openTeamComputer(page, workspaceId);
      await page.getByRole("button", { name: "Start", exact: true }).click();
      await waitForLive(mainScreen(page), "view");
      expect(await mainScreen(page).getByText("● Recording").count()).toBe(0);
      await page.getByRole("button", { name: "Take control" }).click();
      await waitForLive(mainScreen(page), "control");
      await mainScreen(page).getByText("● Recording").waitFor();
      await clickRemote(mainScreen(page), XTERM_POINT);
      const beforeTyping = await canvasRegion(mainScreen(page), XTERM_REGION);
      await page.keyboard.type(TYPED, { delay: 30 });
      await page.keyboard.press("Enter");
      await expect
        .poll(() => canvasRegion(mainScreen(page), XTERM_REGION), { timeout: 20_000 })
        .not.toBe(beforeTyping);
      // what the person saw last: the replay must end on exactly this
      const atRelease = await steadyRegion(mainScreen(page));
      await page.getByRole("button", { name: "Release" }).click();
      await waitForLive(mainScreen(page), "view");
      expect(await mainScreen(page).getByText("● Recording").count()).toBe(0);

      // listed once the proxy's upload ended, complete
      await page.getByRole("link", { name: "Recordings", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Recordings" }).waitFor();
      const list = page.getByRole("table", { name: "Recordings, newest first" });
      await expect
        .poll(
          async () => {
            await page.reload();
            await list.or(page.getByText("No recordings yet")).first().waitFor();
            return (await list.count()) > 0 ? visibleText(list) : "";
          },
          { timeout: 60_000, interval: 2_000 },
        )
        .toMatch(/Take-over\s+Rhea Recorder\s+Team Computer · screen 0.*Complete/s);
      await screenshotBothThemes(page, "recordings");

      // the player: the whole recording arrives
      await list
        .getByRole("link", { name: /^Play the recording of / })
        .first()
        .click();
      await page.waitForURL(/\/recordings\/[^/?]+$/);
      const recordingId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
      await settled();

      // played through at 8×: it ends on the picture the person saw at release
      await page.getByLabel("Speed").selectOption("8");
      await page.getByRole("button", { name: "Play", exact: true }).click();
      await expect
        .poll(() => visibleText(player().getByRole("status")), { timeout: 120_000 })
        .toContain("End of the recording.");
      const duration = await position();
      expect(duration).toBeGreaterThan(1_000);
      expect(await canvasRegion(player(), XTERM_REGION)).toBe(atRelease);
      await screenshotBothThemes(page, "recording-player");
      // and the api, decoding the same recording with noVNC's decoders on the server, ends there too
      const lastFrame = await page.request.get(
        `/v1/workspaces/${workspaceId}/recordings/${recordingId}/frame?at=${duration}`,
      );
      expect(lastFrame.status()).toBe(200);
      expect(pngRegion(await lastFrame.body(), XTERM_REGION)).toBe(atRelease);

      // the timeline, by keyboard: Home seeks to the start, End to the end (a fresh player fed
      // everything up to it at once)
      await page.getByLabel("Position in the recording").focus();
      await page.keyboard.press("Home");
      await expect.poll(position, { timeout: 10_000 }).toBe(0);
      await settled();
      expect(await canvasRegion(player(), XTERM_REGION)).not.toBe(atRelease);
      await page.keyboard.press("End");
      await expect.poll(position, { timeout: 10_000 }).toBe(duration);
      await settled();
      expect(await canvasRegion(player(), XTERM_REGION)).toBe(atRelease);

      // the inputs list what was typed and clicked; a row seeks to its moment, where the typing has
      // not shown yet
      const inputs = page.getByRole("list", { name: "What the person typed and clicked" });
      await expect.poll(() => visibleText(inputs)).toContain(`Typed ${TYPED}`);
      expect(await visibleText(inputs)).toMatch(/Key\s+Enter/);
      expect(await visibleText(inputs)).toMatch(/Left click at \d+, \d+/);
      const api = `/v1/workspaces/${workspaceId}/recordings/${recordingId}`;
      const listed = (await (await page.request.get(`${api}/inputs`)).json()) as {
        inputs: { at: number; type: string; text?: string }[];
      };
      const typed = listed.inputs.find((input) => input.type === "text" && input.text === TYPED);
      if (!typed) throw new Error(`the inputs do not list the typed text: ${JSON.stringify(listed)}`);
      await inputs.getByRole("button", { name: new RegExp(TYPED) }).click();
      await settled();
      expect(await position()).toBe(typed.at);
      const whenTyping = await canvasRegion(player(), XTERM_REGION);
      expect(whenTyping).not.toBe(atRelease);
      expect(await inputs.getByRole("button", { name: new RegExp(TYPED) }).getAttribute("aria-current")).toBe(
        "true",
      );

      // a link's ?at= opens the player at that moment, showing what the input row showed
      await page.goto(`/w/${workspaceId}/recordings/${recordingId}?at=${typed.at}`);
      await settled();
      expect(await position()).toBe(typed.at);
      expect(await canvasRegion(player(), XTERM_REGION)).toBe(whenTyping);

      // the file: the recording's header, then its records
      const [file] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: /^Download the recording file/ }).click(),
      ]);
      expect(file.suggestedFilename()).toBe(`recording-${recordingId}.cubicle-rec`);
      const bytes = readFileSync(await file.path());
      expect(bytes.subarray(0, RECORDING_FILE_MAGIC.length).toString("latin1")).toBe(RECORDING_FILE_MAGIC);
      expect(bytes.length).toBeGreaterThan(RECORDING_FILE_MAGIC.length + 1_000);

      // a video made in the background, with progress, as long as the recording
      await page.getByRole("button", { name: "Export video" }).click();
      await page.getByText("The video is ready.").waitFor({ timeout: 240_000 });
      const [video] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: /^Download the video \(WebM/ }).click(),
      ]);
      const videoPath = await video.path();
      expect(statSync(videoPath).size).toBeGreaterThan(0);
      const seconds = Number(
        execFileSync(
          "ffprobe",
          ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", videoPath],
          { encoding: "utf8" },
        ).trim(),
      );
      expect(Math.abs(seconds * 1000 - duration)).toBeLessThan(1_000);

      // the audit log links the grant to its recording, and the take-over to its recordings
      await page.getByRole("link", { name: "Audit log" }).click();
      const trail = page.getByRole("table", { name: /audit events/i });
      await expect.poll(() => visibleText(trail), { timeout: 30_000 }).toContain("recording.downloaded");
      expect(
        await trail
          .locator("tr", { hasText: "screen.capability_minted" })
          .getByRole("link", { name: "Play the recording" })
          .first()
          .getAttribute("href"),
      ).toBe(`/w/${workspaceId}/recordings/${recordingId}`);
      await trail
        .locator("tr", { hasText: "screen.control_granted" })
        .getByRole("link", { name: "Recordings of this take-over" })
        .click();
      await page.getByText("Showing the recordings of one take-over.").waitFor();
      await expect
        .poll(() => page.getByRole("table", { name: "Recordings, newest first" }).locator("tbody tr").count())
        .toBe(1);
    },
    JOURNEY_TIMEOUT_MS,
  );
});
