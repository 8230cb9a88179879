import { createHmac } from "node:crypto";
import {
  type ActResult,
  type DesktopAction,
  MAX_SCREENS,
  type Observation,
  ProviderError,
} from "../contract/index.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { actionScript } from "../kernel/xdotool.ts";
import { failure, type SandboxLayout, type SandboxMachine } from "./machine.ts";

/**
 * Screen i of a vendor's sandbox is X display :(displayBase + i); screen 0 is the vendor's own.
 * Its servers (kit/screen) listen where the vendor routes browsers' traffic: view on
 * webPortBase + 2i, control on the port after, each a websockify in front of an x11vnc on the
 * sandbox's loopback. The vendor adapter turns a port into a screen target.
 */
export function screenEnv(layout: SandboxLayout, screen: number): Record<string, string> | null {
  return Number.isInteger(screen) && screen >= 0 && screen < MAX_SCREENS
    ? { DISPLAY: `:${layout.displayBase + screen}` }
    : null;
}

export function requireScreen(index: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_SCREENS) {
    throw new ProviderError("INVALID_SCREEN", `screen ${index} is outside 0…${MAX_SCREENS - 1}`);
  }
}

export const viewPort = (layout: SandboxLayout, screen: number) => layout.webPortBase + 2 * screen;
export const controlPort = (layout: SandboxLayout, screen: number) => layout.webPortBase + 2 * screen + 1;
const SCREEN_OP_MS = 60_000;

/**
 * The view server's VNC password: derived from the vendor's API key, the sandbox and the screen,
 * so that every api replica (and a restarted one) arrives at the same password without storing
 * it, and nobody without the key can.
 */
export function viewPassword(secret: string, sandboxId: string, screen: number): string {
  return createHmac("sha256", secret)
    .update(`cubicle view ${sandboxId} ${screen}`)
    .digest("base64url")
    .slice(0, 8);
}

async function screenCommand(machine: SandboxMachine, args: string[], what: string): Promise<void> {
  const result = await machine.exec([machine.program("screen"), ...args].map(shellQuote).join(" "), {
    timeoutMs: SCREEN_OP_MS,
  });
  if (result.exitCode !== 0) throw failure(what, result);
}

/** Starts the screen (screens past 0) and its view-only server; returns the port it serves on. */
export async function startView(machine: SandboxMachine, index: number, password: string): Promise<number> {
  await screenCommand(machine, ["view", String(index), password], `starting screen ${index}`);
  return viewPort(machine.layout, index);
}

export async function startControl(
  machine: SandboxMachine,
  index: number,
  password: string,
): Promise<number> {
  await screenCommand(machine, ["control", String(index), password], `opening control of screen ${index}`);
  return controlPort(machine.layout, index);
}

export async function closeControl(machine: SandboxMachine, index: number): Promise<void> {
  await screenCommand(machine, ["control-close", String(index)], `closing control of screen ${index}`);
}

/**
 * A screenshot with scrot, the pointer drawn in (as vendors' own screenshots show it), into a scratch file read back
 * through the vendor's file API, with the pointer and the active window's title from xdotool.
 */
export async function observe(machine: SandboxMachine, index: number): Promise<Observation> {
  const shot = `${machine.scratchFile("shot")}.png`;
  const pngTarget = `png:${shot}`;
  // ImageMagick's import where a vendor's template has no scrot (Box's is known to have import)
  const script = `{ scrot --pointer --overwrite ${shellQuote(shot)} 2>/dev/null || import -window root ${shellQuote(pngTarget)}; } >/dev/null || exit 3
xdotool getmouselocation --shell
printf 'WINDOW_NAME=%s\\n' "$(xdotool getactivewindow getwindowname 2>/dev/null)"`;
  try {
    const result = await machine.exec(script, {
      timeoutMs: SCREEN_OP_MS,
      env: screenEnv(machine.layout, index) ?? {},
    });
    if (result.exitCode !== 0) throw failure("taking a screenshot", result);
    const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(result.stdout)?.[1];
    const png = await machine.shell.download(shot);
    const view = Buffer.from(png.buffer, png.byteOffset, png.byteLength);
    if (view.length < 24 || view.toString("latin1", 12, 16) !== "IHDR") {
      throw new ProviderError("PROVIDER_FAILURE", "the screenshot is not a PNG");
    }
    const title = field("WINDOW_NAME") ?? "";
    return {
      png,
      width: view.readUInt32BE(16),
      height: view.readUInt32BE(20),
      cursor: { x: Number(field("X") ?? 0), y: Number(field("Y") ?? 0) },
      activeWindow: title === "" ? null : title,
    };
  } finally {
    await machine.removeScratch(shot);
  }
}

/** A validated batch as one xdotool script (kernel/xdotool.ts); it prints `ok` per completed action. */
export async function act(
  machine: SandboxMachine,
  index: number,
  actions: DesktopAction[],
): Promise<ActResult> {
  const { script, deadlineMs } = actionScript(actions);
  const result = await machine.exec(script, {
    timeoutMs: deadlineMs,
    env: screenEnv(machine.layout, index) ?? {},
  });
  const completed = result.stdout.split("\n").filter((line) => line === "ok").length;
  const total = actions.length;
  if (completed === total && result.exitCode === 0) return { completed, total };
  const failed = actions[completed];
  const said = result.stderr.trim().slice(-300) || `exit status ${result.exitCode}`;
  return { completed, total, error: `action ${completed + 1} (${failed?.type ?? "?"}) failed: ${said}` };
}
