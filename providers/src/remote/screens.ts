import { createHmac, randomUUID } from "node:crypto";
import type { Sandbox } from "@e2b/desktop";
import {
  type ActResult,
  type DesktopAction,
  MAX_SCREENS,
  type Observation,
  ProviderError,
  type ScreenTarget,
} from "../contract/index.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { actionScript } from "../kernel/xdotool.ts";
import { failure, kitCommand, kitProgram, SCRATCH_DIR } from "./kit.ts";
import type { E2bConnection } from "./sandboxes.ts";
import { asProviderError } from "./sandboxes.ts";

/**
 * Screen i of an E2B computer is X display :i (the vendor's primary display is :0). Its servers
 * (kit/screen) listen where E2B routes browsers' traffic: view on port 6080+2i, control on
 * 6081+2i, each a websockify in front of an x11vnc on the sandbox's loopback.
 */
export const e2bScreenEnv = (screen: number): Record<string, string> | null =>
  Number.isInteger(screen) && screen >= 0 && screen < MAX_SCREENS ? { DISPLAY: `:${screen}` } : null;

export function requireScreen(index: number): void {
  if (!Number.isInteger(index) || index < 0 || index >= MAX_SCREENS) {
    throw new ProviderError("INVALID_SCREEN", `screen ${index} is outside 0…${MAX_SCREENS - 1}`);
  }
}

const viewPort = (screen: number) => 6080 + 2 * screen;
const controlPort = (screen: number) => 6081 + 2 * screen;
const SCREEN_OP_MS = 60_000;

/**
 * The view server's VNC password: derived from the API key, the sandbox and the screen, so that
 * every api replica (and a restarted one) arrives at the same password without storing it, and
 * nobody without the key can.
 */
function viewPassword(connection: E2bConnection, sandboxId: string, screen: number): string {
  return createHmac("sha256", connection.apiKey)
    .update(`cubicle view ${sandboxId} ${screen}`)
    .digest("base64url")
    .slice(0, 8);
}

/**
 * How the screen proxy reaches one of the sandbox's ports: E2B's own host for it
 * (`<port>-<sandbox id>.<domain>`), or, when the SDK is given one address for sandboxes
 * (E2B_SANDBOX_URL), that address with the sandbox and port named in E2B's routing headers, the
 * way the SDK itself reaches envd there. The traffic token travels as a header. All of it is
 * sealed into the capability; no browser sees it.
 */
function portTarget(
  connection: E2bConnection,
  sandbox: Sandbox,
  port: number,
  password: string,
): ScreenTarget {
  const headers: Record<string, string> = {};
  if (sandbox.trafficAccessToken) headers["e2b-traffic-access-token"] = sandbox.trafficAccessToken;
  if (connection.sandboxUrl) {
    const base = new URL(connection.sandboxUrl);
    base.protocol = base.protocol === "https:" ? "wss:" : "ws:";
    base.pathname = "/websockify";
    headers["E2b-Sandbox-Id"] = sandbox.sandboxId;
    headers["E2b-Sandbox-Port"] = String(port);
    return { kind: "vendor-websocket", url: base.toString(), password, headers };
  }
  return { kind: "vendor-websocket", url: `wss://${sandbox.getHost(port)}/websockify`, password, headers };
}

async function screenCommand(sandbox: Sandbox, args: string[], what: string): Promise<void> {
  const result = await kitCommand(sandbox, [kitProgram("screen"), ...args].map(shellQuote).join(" "), {
    timeoutMs: SCREEN_OP_MS,
  });
  if (result.exitCode !== 0) throw failure(what, result);
}

export async function openScreen(
  connection: E2bConnection,
  sandbox: Sandbox,
  index: number,
): Promise<ScreenTarget> {
  const password = viewPassword(connection, sandbox.sandboxId, index);
  await screenCommand(sandbox, ["view", String(index), password], `starting screen ${index}`);
  return portTarget(connection, sandbox, viewPort(index), password);
}

export async function openControl(
  connection: E2bConnection,
  sandbox: Sandbox,
  index: number,
  password: string,
): Promise<ScreenTarget> {
  await screenCommand(sandbox, ["control", String(index), password], `opening control of screen ${index}`);
  return portTarget(connection, sandbox, controlPort(index), password);
}

export async function closeControl(sandbox: Sandbox, index: number): Promise<void> {
  await screenCommand(sandbox, ["control-close", String(index)], `closing control of screen ${index}`);
}

/**
 * A screenshot with scrot, the pointer drawn in (as E2B's own `screenshot()` takes one), into a scratch file read back
 * through envd's file API, with the pointer and the active window's title from xdotool.
 */
export async function observe(sandbox: Sandbox, index: number): Promise<Observation> {
  const shot = `${SCRATCH_DIR}/shot-${randomUUID()}.png`;
  const script = `scrot --pointer --overwrite ${shellQuote(shot)} >/dev/null || exit 3
xdotool getmouselocation --shell
printf 'WINDOW_NAME=%s\\n' "$(xdotool getactivewindow getwindowname 2>/dev/null)"`;
  try {
    const result = await kitCommand(sandbox, script, {
      timeoutMs: SCREEN_OP_MS,
      env: { DISPLAY: `:${index}` },
    });
    if (result.exitCode !== 0) throw failure("taking a screenshot", result);
    const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(result.stdout)?.[1];
    let png: Uint8Array;
    try {
      png = await sandbox.files.read(shot, { format: "bytes" });
    } catch (error) {
      throw asProviderError("reading the screenshot", error);
    }
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
    await kitCommand(sandbox, `rm -f -- ${shellQuote(shot)}`, { timeoutMs: SCREEN_OP_MS }).catch(
      () => undefined,
    );
  }
}

/** A validated batch as one xdotool script (kernel/xdotool.ts); it prints `ok` per completed action. */
export async function act(sandbox: Sandbox, index: number, actions: DesktopAction[]): Promise<ActResult> {
  const { script, deadlineMs } = actionScript(actions);
  const result = await kitCommand(sandbox, script, { timeoutMs: deadlineMs, env: { DISPLAY: `:${index}` } });
  const completed = result.stdout.split("\n").filter((line) => line === "ok").length;
  const total = actions.length;
  if (completed === total && result.exitCode === 0) return { completed, total };
  const failed = actions[completed];
  const said = result.stderr.trim().slice(-300) || `exit status ${result.exitCode}`;
  return { completed, total, error: `action ${completed + 1} (${failed?.type ?? "?"}) failed: ${said}` };
}
