import { readFileSync } from "node:fs";
import { expectStatus, TestClient } from "@cubicle/api/testing/harness";
import { shellResult } from "@cubicle/api/testing/sessions";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import {
  canvasRegion,
  clickRemote,
  createBot,
  mainScreen,
  openTeamComputer,
  PASSWORD,
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
 * The dashboard as people use it: Debian's Chromium drives the built Next.js dashboard, which talks
 * to the real api; live screens come from a real Docker computer through the real proxy. The three
 * journeys share one deployment and run in order: the admin's sets up what the others use.
 */

const world = { workspaceId: "", computerId: "", bots: {} as Record<string, string> };
const journeys = setUpJourneys({
  workspaceId: () => world.workspaceId,
  failure: (test) => `failed-${test.split(":")[0]}`,
});

const thumb = (page: Page, index: number) => page.getByTestId(`screen-thumb-${index}`);

/** Runs a command on the computer through the page's command box; its output once it exited 0. */
async function runCommand(page: Page, command: string): Promise<string> {
  await page.getByLabel("Command", { exact: true }).fill(command);
  await page.getByRole("button", { name: "Run" }).click();
  const output = page.getByTestId("command-output");
  await expect.poll(() => visibleText(output), { timeout: 30_000 }).toContain("[exit code 0]");
  return visibleText(output);
}

async function auditActions(page: Page): Promise<string[]> {
  return page
    .getByRole("table", { name: /audit events/i })
    .locator("tbody tr")
    .allInnerTexts();
}

describe("dashboard on the real stack", () => {
  it(
    "admin journey: sign up → workspace → bots → live screen → control → release → checkpoint → restore → audit",
    async () => {
      const { page } = journeys.admin;
      await page.goto("/sign-in");
      await screenshotBothThemes(page, "sign-in");
      await page.goto("/sign-up");
      await screenshotBothThemes(page, "sign-up");
      await signUp(page, { name: "Ada Admin", email: "ada@example.test" });
      await page.waitForURL("**/workspaces/new");
      await screenshotBothThemes(page, "workspace-new");
      await page.getByLabel("Workspace name").fill("Night shift");
      await page.getByRole("button", { name: "Create workspace" }).click();
      await page.waitForURL(/\/w\/[^/]+\/computers$/);
      world.workspaceId = new URL(page.url()).pathname.split("/")[2] ?? "";
      expect(world.workspaceId).not.toBe("");

      // two Team bots and one Private bot, through the charter form
      await page.getByRole("link", { name: "Bots" }).click();
      await page.getByRole("heading", { level: 1, name: "Bots" }).first().waitFor();
      await page
        .getByText(/share browser sessions/i)
        .first()
        .first()
        .waitFor();
      await createBot(page, { name: "Scout", mode: "Team" });
      await createBot(page, { name: "Clerk", mode: "Team" });
      await createBot(page, { name: "Vault", mode: "Private", why: "Holds the payroll login" });
      await screenshotBothThemes(page, "bots");

      // start the Team Computer; its live screen shows in the grid
      await page.getByRole("link", { name: "Computers" }).click();
      await page.getByRole("heading", { level: 1, name: "Computers" }).first().waitFor();
      await openTeamComputer(page, world.workspaceId);
      world.computerId = new URL(page.url()).pathname.split("/").at(-1) ?? "";
      await page.getByRole("button", { name: "Start", exact: true }).click();
      await waitForLive(thumb(page, 0), "view");
      await waitForLive(mainScreen(page), "view");
      await screenshotBothThemes(page, "computer");

      // take control and type into the xterm: the next frames show the text
      await page.getByRole("button", { name: "Take control" }).click();
      await waitForLive(mainScreen(page), "control");
      await page.getByText(/Your control ends in \d+:\d\d/).waitFor();
      await page.getByRole("button", { name: "Renew" }).click();
      await clickRemote(mainScreen(page), XTERM_POINT);
      const beforeTyping = await canvasRegion(mainScreen(page), XTERM_REGION);
      await page.keyboard.type("echo typed-through-the-dashboard", { delay: 20 });
      await expect
        .poll(() => canvasRegion(mainScreen(page), XTERM_REGION), { timeout: 20_000 })
        .not.toBe(beforeTyping);
      await screenshotBothThemes(page, "computer-control");

      // the clipboard box of a controlled screen: what is pasted there becomes the computer's
      // clipboard, and what is copied in the computer shows there and copies out
      const clipboard = page.getByRole("region", { name: "Clipboard" });
      await clipboard.getByLabel("Paste into the computer").fill("pasted-through-the-dashboard");
      await clipboard.getByRole("button", { name: "Send to the computer" }).click();
      await clipboard.getByText(/^Sent:/).waitFor();
      expect(await runCommand(page, "xclip -o -selection clipboard")).toContain(
        "pasted-through-the-dashboard",
      );
      // xclip stays to serve the selection (in its own session, so the command's end does not take it)
      await runCommand(
        page,
        "printf %s copied-in-the-computer | setsid xclip -selection clipboard >/dev/null 2>&1",
      );
      const copied = clipboard.getByLabel("Copied in the computer");
      await expect.poll(() => copied.inputValue(), { timeout: 20_000 }).toBe("copied-in-the-computer");
      await journeys.admin.context.grantPermissions(["clipboard-read", "clipboard-write"], {
        origin: journeys.stack.webUrl,
      });
      await clipboard.getByRole("button", { name: "Copy", exact: true }).click();
      await clipboard.getByText("Copied to your clipboard.").waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe("copied-in-the-computer");

      // release: the viewer is view-only again, without the clipboard, and typing changes nothing
      await page.getByRole("button", { name: "Release" }).click();
      await waitForLive(mainScreen(page), "view");
      await page.getByRole("button", { name: "Take control" }).first().waitFor();
      expect(await clipboard.count()).toBe(0);
      await clickRemote(mainScreen(page), XTERM_POINT);
      const afterRelease = await canvasRegion(mainScreen(page), XTERM_REGION);
      await page.keyboard.type("this must not arrive", { delay: 20 });
      await page.waitForTimeout(3_000);
      expect(await canvasRegion(mainScreen(page), XTERM_REGION)).toBe(afterRelease);

      // a command runs with its output streamed, and a file goes up through the file browser
      await page.getByLabel("Command", { exact: true }).fill("echo streamed-from-the-runner; id -un");
      await page.getByRole("button", { name: "Run" }).click();
      const output = page.getByTestId("command-output");
      await expect.poll(() => visibleText(output), { timeout: 30_000 }).toContain("[exit code 0]");
      expect(await visibleText(output)).toContain("streamed-from-the-runner\ncubicle");
      await section(page, "Files")
        .getByLabel("Choose a file")
        .setInputFiles({
          name: "notes.txt",
          mimeType: "text/plain",
          buffer: Buffer.from("for the night shift"),
        });
      await page.getByRole("button", { name: "Upload" }).click();
      // the upload goes through the api and the supervisor into the computer
      await expect
        .poll(() => visibleText(section(page, "Files").getByRole("table")), { timeout: 15_000 })
        .toContain("notes.txt");

      // network access: the running computer goes offline without a restart; a connection it then
      // tries is refused, counted on the page and audited; then it follows the workspace's policy again
      const network = section(page, "Network access");
      await network.getByRole("radio", { name: "Offline" }).check();
      await network.getByRole("button", { name: "Apply to this computer" }).click();
      await expect
        .poll(() => visibleText(network), { timeout: 15_000 })
        .toContain("(its own policy, overriding the workspace's)");
      // the marker is computed, so the command's own text never matches it
      const tried = await runCommand(
        page,
        "timeout 5 bash -c 'exec 3<>/dev/tcp/192.0.2.1/9' 2>/dev/null && echo connected || echo refused-$((40+2))",
      );
      expect(tried).toContain("refused-42");
      await expect
        .poll(() => visibleText(network), { timeout: 60_000 })
        .toMatch(/Connections refused: [1-9]/);
      await network.getByRole("button", { name: "Use the workspace's policy" }).click();
      await expect
        .poll(() => visibleText(network), { timeout: 15_000 })
        .toContain("(the workspace's policy)");

      // a checkpoint, then restore it into the current computer
      const timeline = section(page, "Checkpoints");
      await page.getByRole("button", { name: "Take checkpoint" }).click();
      await expect
        .poll(() => timeline.getByRole("button", { name: "Restore" }).count(), { timeout: 120_000 })
        .toBeGreaterThan(0);
      await timeline.getByRole("button", { name: "Restore" }).first().click();
      const dialog = page.getByRole("dialog");
      await dialog
        .getByRole("button", { name: /restore/i })
        .last()
        .click();
      await expect
        .poll(() => visibleText(timeline.getByRole("table")), { timeout: 120_000 })
        .toContain("Before a restore");

      // the audit page lists every step
      await page.getByRole("link", { name: "Audit log" }).click();
      await page.getByRole("heading", { level: 1, name: "Audit log" }).first().waitFor();
      await page.getByLabel(/whole deployment/i).check();
      await expect
        .poll(async () => (await auditActions(page)).join("\n"), { timeout: 30_000 })
        .toContain("checkpoint.restored");
      const trail = (await auditActions(page)).join("\n");
      for (const action of [
        "auth.sign_up",
        "workspace.created",
        "bot.created",
        "computer.started",
        "screen.control_granted",
        "screen.control_renewed",
        "screen.control_released",
        "computer.shell",
        "computer.file_written",
        "computer.egress_changed",
        "computer.egress_refused",
        "checkpoint.created",
        "checkpoint.restored",
      ])
        expect(trail, `the audit page lists ${action}`).toContain(action);
      expect(trail.match(/bot\.created/g)?.length).toBe(3);
      await screenshotBothThemes(page, "audit");
    },
    JOURNEY_TIMEOUT_MS,
  );

  it(
    "viewer journey: a viewer watches the live screen, has no Take control, the api refuses control; sign out and in",
    async () => {
      const { admin } = journeys;
      await admin.page.goto(`/w/${world.workspaceId}/members`);
      await admin.page.getByLabel("Email address").fill("vic@example.test");
      await admin.page.getByLabel("Invite as").selectOption("viewer");
      await admin.page.getByRole("button", { name: "Invite", exact: true }).click();
      await expect
        .poll(() => visibleText(admin.page.getByRole("table", { name: "Pending invitations" })), {
          timeout: 15_000,
        })
        .toContain("vic@example.test");
      await screenshotBothThemes(admin.page, "members");

      const viewer = await journeys.newPerson();
      await signUp(viewer.page, { name: "Vic Viewer", email: "vic@example.test" });
      await viewer.page.waitForURL("**/workspaces/new");
      await viewer.page.goto("/invitations");
      await screenshotBothThemes(viewer.page, "invitations");
      await viewer.page.getByRole("button", { name: "Accept" }).click();
      await viewer.page.waitForURL(`**/w/${world.workspaceId}/computers`);
      await openTeamComputer(viewer.page, world.workspaceId);
      await waitForLive(mainScreen(viewer.page), "view");
      expect(await viewer.page.getByRole("button", { name: "Take control" }).count()).toBe(0);

      const screens = `/v1/workspaces/${world.workspaceId}/computers/${world.computerId}/screens/0`;
      const asViewer = { headers: { origin: journeys.stack.webUrl } };
      const control = await viewer.page.request.post(`${screens}/control`, asViewer);
      expect(control.status()).toBe(403);
      expect(await control.json()).toMatchObject({ code: "ROLE_FORBIDDEN" });
      const capability = await viewer.page.request.post(`${screens}/capabilities`, {
        ...asViewer,
        data: { mode: "control" },
      });
      expect(capability.status()).toBe(403);

      // signing out ends the session; signing in again comes back to the workspace
      await viewer.page.getByRole("button", { name: "Sign out" }).click();
      await viewer.page.waitForURL("**/sign-in");
      const me = await viewer.page.request.get("/v1/me");
      expect(me.status()).toBe(401);
      await viewer.page.getByLabel("Email").fill("vic@example.test");
      await viewer.page.getByLabel("Password").fill(PASSWORD);
      await viewer.page.getByRole("button", { name: "Sign in" }).click();
      await viewer.page.waitForURL(`**/w/${world.workspaceId}/computers`);
      await viewer.context.close();
    },
    JOURNEY_TIMEOUT_MS,
  );

  it(
    "automation journey: an API key made in the dashboard opens a session, runs a command, writes a file; the dashboard shows both",
    async () => {
      const { page } = journeys.admin;
      await page.goto(`/w/${world.workspaceId}/api-keys`);
      await page.getByLabel("Name", { exact: true }).fill("nightly reports");
      await page.getByLabel("Role").selectOption("member");
      await page.getByRole("button", { name: "Create API key" }).click();
      const key = await page.getByLabel("Your new API key").inputValue();
      expect(key.length).toBeGreaterThan(20);
      await page.getByRole("button", { name: "Copy" }).first().waitFor();
      await screenshotBothThemes(page, "api-keys");

      const automation = new TestClient(journeys.stack.apiUrl, []);
      const bots = expectStatus(
        await automation.get(`/v1/workspaces/${world.workspaceId}/bots`, { apiKey: key }),
        200,
      );
      const scout = (bots.json.items as { id: string; name: string }[]).find((b) => b.name === "Scout");
      if (!scout) throw new Error("the Scout bot is missing");
      const base = `/v1/workspaces/${world.workspaceId}/bots/${scout.id}/sessions`;
      const opened = expectStatus(await automation.post(base, undefined, { apiKey: key }), 201).json;
      const session = { apiKey: key, headers: { "x-session-fence": String(opened.fence) } };
      const shell = shellResult(
        await automation.post(
          `${base}/${opened.sessionId}/shell`,
          { command: "echo report ready; pwd" },
          session,
        ),
      );
      expect(shell.stdout).toBe(`report ready\n/home/cubicle/bots/${scout.id}\n`);
      expect(shell.exit).toMatchObject({ code: 0 });
      expectStatus(
        await automation.put(
          `${base}/${opened.sessionId}/files/content?path=report.txt`,
          "numbers for the night",
          {
            ...session,
            headers: { ...session.headers, "content-type": "application/octet-stream" },
          },
        ),
        204,
      );

      // the dashboard shows the session and the file
      await openTeamComputer(page, world.workspaceId);
      const sessions = section(page, "Sessions");
      await expect.poll(() => visibleText(sessions), { timeout: 30_000 }).toContain("Scout");
      const files = section(page, "Files");
      await files.getByRole("button", { name: `bots/${scout.id}/` }).click();
      await expect.poll(() => visibleText(files), { timeout: 30_000 }).toContain("report.txt");
      await screenshotBothThemes(page, "computer-files");
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        files.getByRole("button", { name: "Download report.txt" }).click(),
      ]);
      expect(download.suggestedFilename()).toBe("report.txt");
      expect(readFileSync(await download.path(), "utf8")).toBe("numbers for the night");

      // on a tablet the computer page fits the width (nothing scrolls sideways)
      await page.setViewportSize({ width: 768, height: 1024 });
      await expect
        .poll(() => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth))
        .toBeLessThanOrEqual(0);
      await screenshotBothThemes(page, "computer-tablet");
      await page.setViewportSize({ width: 1280, height: 900 });

      expectStatus(
        await automation.post(`${base}/${opened.sessionId}/end`, { outcome: "success" }, session),
        200,
      );
      await page.goto(`/w/${world.workspaceId}/computers`);
      await page.getByRole("link", { name: "Team Computer" }).first().waitFor();
      await screenshotBothThemes(page, "computers");
      await page.goto(`/w/${world.workspaceId}/settings`);
      await page.getByLabel("Allow new sign-ups").waitFor();
      await page.getByText("docker", { exact: true }).first().waitFor();
      await screenshotBothThemes(page, "settings");
    },
    JOURNEY_TIMEOUT_MS,
  );
});
