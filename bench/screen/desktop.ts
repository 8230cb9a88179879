/**
 * The screens the bench watches, on the host: a display playing the "video" (Chromium in kiosk mode
 * on a canvas animation) and an idle one (an xterm doing nothing, moved by xdotool to make a
 * change), each at a Docker computer's geometry, and x11vnc servers on them with given flags.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { freePort, startChild, waitForOutput } from "../proxy/processes.ts";
import { x11vncArguments } from "./flags.ts";

const run = promisify(execFile);
const VIDEO_PAGE = new URL("./video.html", import.meta.url).href;

/**
 * Chromium full screen on the page, with the flags a headless host needs; returns a reader of the
 * frames per second the page says it drew in the last second.
 */
export async function playVideo(display: string): Promise<() => Promise<number | undefined>> {
  const profile = mkdtempSync(join(tmpdir(), "cubicle-bench-chromium-"));
  process.once("exit", () => rmSync(profile, { recursive: true, force: true }));
  startChild(
    "chromium",
    [
      ...["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
      ...["--no-first-run", "--no-default-browser-check", "--password-store=basic", "--noerrdialogs"],
      ...[`--user-data-dir=${profile}`, "--window-position=0,0", "--window-size=1280,800"],
      ...["--kiosk", VIDEO_PAGE],
    ],
    { env: { ...process.env, DISPLAY: display } },
  );
  const drawn = async () => {
    const title = await run("xdotool", ["search", "--name", "^video"], {
      env: { ...process.env, DISPLAY: display },
    })
      .then(({ stdout }) => stdout.trim().split("\n")[0] as string)
      .then((window) =>
        run("xdotool", ["getwindowname", window], { env: { ...process.env, DISPLAY: display } }),
      )
      .catch(() => undefined);
    const fps = title && /video (\d+) fps/.exec(title.stdout)?.[1];
    return fps ? Number(fps) : undefined;
  };
  // Playing once the page has counted a first second of frames.
  const deadline = Date.now() + 60_000;
  while ((await drawn()) === undefined) {
    if (Date.now() > deadline) throw new Error("chromium did not show the video page in time");
    await sleep(250);
  }
  return drawn;
}

/** An xterm that does nothing; `change()` moves it, which changes pixels across the screen's middle. */
export async function idleWindow(display: string): Promise<{ change(): Promise<void> }> {
  const env = { ...process.env, DISPLAY: display };
  startChild("xterm", ["-geometry", "80x24+100+100", "-e", "sleep", "infinity"], { env });
  let window = "";
  const deadline = Date.now() + 60_000;
  while (!window) {
    if (Date.now() > deadline) throw new Error("the idle xterm did not show in time");
    window = await run("xdotool", ["search", "--class", "xterm"], { env })
      .then(({ stdout }) => stdout.trim().split("\n")[0] ?? "")
      .catch(() => "");
    if (!window) await sleep(100);
  }
  let moves = 0;
  return {
    async change() {
      moves++;
      await run("xdotool", ["windowmove", "--sync", window, String(100 + (moves % 2) * 300), "100"], { env });
    },
  };
}

export interface VncServer {
  pid: number;
  port: number;
}

export async function startX11vnc(display: string, flags: readonly string[]): Promise<VncServer> {
  const port = await freePort();
  const child = startChild("x11vnc", x11vncArguments(flags, display, port), {
    env: { ...process.env, DISPLAY: display },
  });
  const listening = Number(await waitForOutput(child, child.stdout, /^PORT=(\d+)$/m, "x11vnc"));
  if (listening !== port) throw new Error(`x11vnc listens on ${listening}, not ${port}`);
  return { pid: child.pid as number, port };
}
