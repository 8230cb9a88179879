import type { Sandbox } from "@daytonaio/sdk";
import {
  type ActResult,
  type DesktopAction,
  type Observation,
  ProviderError,
  type ScreenTarget,
} from "../contract/index.ts";
import type { SandboxLayout } from "../remote/machine.ts";
import { vendorCall } from "./sandboxes.ts";

/**
 * Daytona's default sandbox: user `daytona`; computer use runs display :1 (screen 0) with its own
 * x11vnc on 5901 and noVNC on 6080, so Cubicle's screen servers take ports past those.
 */
export const DAYTONA_LAYOUT: SandboxLayout = {
  userHome: "/home/daytona",
  user: { uid: 1000, gid: 1000 },
  displayBase: 1,
  webPortBase: 6090,
  vncPortBase: 5910,
};

/**
 * How the screen proxy reaches one of the sandbox's ports: its preview URL, with the preview
 * token as the header Daytona's proxy checks. Both are read afresh at every open (Daytona changes
 * the token at every start), sealed into the capability and never stored; no browser sees them.
 */
export async function previewTarget(sandbox: Sandbox, port: number, password: string): Promise<ScreenTarget> {
  const { url, token } = await vendorCall("reading the screen's preview link", () =>
    sandbox.getPreviewLink(port),
  );
  const target = new URL(url);
  target.protocol = target.protocol === "https:" ? "wss:" : "ws:";
  target.pathname = `${target.pathname.replace(/\/$/, "")}/websockify`;
  return {
    kind: "vendor-websocket",
    url: target.toString(),
    password,
    headers: { "x-daytona-preview-token": token },
  };
}

/** Starts computer use (its display, desktop and servers) unless it runs: a stop ends them all. */
export async function startComputerUse(sandbox: Sandbox): Promise<void> {
  const { status } = await vendorCall("reading computer use's state", () => sandbox.computerUse.getStatus());
  if (status === "active") return;
  await vendorCall("starting computer use", () => sandbox.computerUse.start());
}

/** Screen 0 through computer use: a screenshot with the pointer drawn in, and the active window. */
export async function observeComputerUse(sandbox: Sandbox): Promise<Observation> {
  const [shot, windows] = await Promise.all([
    vendorCall("taking a screenshot", () => sandbox.computerUse.screenshot.takeFullScreen(true)),
    vendorCall("listing the windows", () => sandbox.computerUse.display.getWindows()),
  ]);
  const png = Buffer.from(shot.screenshot ?? "", "base64");
  if (png.length < 24 || png.toString("latin1", 12, 16) !== "IHDR") {
    throw new ProviderError("PROVIDER_FAILURE", "the screenshot is not a PNG");
  }
  const active = windows.windows?.find((window) => window.isActive);
  return {
    png: new Uint8Array(png.buffer, png.byteOffset, png.byteLength),
    width: png.readUInt32BE(16),
    height: png.readUInt32BE(20),
    cursor: { x: shot.cursorPosition?.x ?? 0, y: shot.cursorPosition?.y ?? 0 },
    activeWindow: active?.title ? active.title : null,
  };
}

type Step = (sandbox: Sandbox) => Promise<unknown>;

const BUTTON = { click: "left", double_click: "left", right_click: "right", middle_click: "middle" } as const;
/** Daytona's names for the modifiers (its keyboard normalises the rest of X's key names). */
const MODIFIER = { ctrl: "ctrl", alt: "alt", shift: "shift", super: "cmd" } as const;

/**
 * A validated batch as computer-use calls, or null when it needs what computer use cannot do (a
 * click with modifiers held, a button held across other actions): the caller then runs it the
 * way it runs other screens. A mouse_down followed by its mouse_up is one click, or one drag when
 * the up is elsewhere.
 */
export function computerUseSteps(actions: DesktopAction[]): Step[] | null {
  const steps: Step[] = [];
  for (let i = 0; i < actions.length; i++) {
    const action = actions[i] as DesktopAction;
    switch (action.type) {
      case "click":
      case "double_click":
      case "right_click":
      case "middle_click": {
        if (action.modifiers?.length) return null;
        const { x, y } = action;
        const button = BUTTON[action.type];
        const double = action.type === "double_click";
        steps.push((s) => s.computerUse.mouse.click(x, y, button, double));
        break;
      }
      case "move": {
        const { x, y } = action;
        steps.push((s) => s.computerUse.mouse.move(x, y));
        break;
      }
      case "mouse_down": {
        const up = actions[i + 1];
        if (up?.type !== "mouse_up" || up.button !== action.button) return null;
        const { button } = action;
        const from = action.x !== undefined && action.y !== undefined ? { x: action.x, y: action.y } : null;
        const to = up.x !== undefined && up.y !== undefined ? { x: up.x, y: up.y } : null;
        steps.push(async (s) => {
          const here = from ? null : await s.computerUse.mouse.getPosition();
          const start = from ?? { x: here?.x ?? 0, y: here?.y ?? 0 };
          const end = to ?? start;
          if (end.x === start.x && end.y === start.y)
            return s.computerUse.mouse.click(start.x, start.y, button);
          return s.computerUse.mouse.drag(start.x, start.y, end.x, end.y, button);
        });
        // the pair is one step, but two actions
        steps.push(async () => undefined);
        i++;
        break;
      }
      case "mouse_up":
        return null;
      case "drag": {
        const { from, to } = action;
        steps.push((s) => s.computerUse.mouse.drag(from.x, from.y, to.x, to.y, "left"));
        break;
      }
      case "type": {
        const { text } = action;
        steps.push((s) => s.computerUse.keyboard.type(text));
        break;
      }
      case "key": {
        const { key } = action;
        const modifiers = (action.modifiers ?? []).map((modifier) => MODIFIER[modifier]);
        steps.push((s) => s.computerUse.keyboard.press(key, modifiers));
        break;
      }
      case "scroll": {
        const { x, y, dx, dy } = action;
        if (dx !== 0) return null;
        steps.push((s) =>
          dy === 0
            ? s.computerUse.mouse.move(x, y)
            : s.computerUse.mouse.scroll(x, y, dy > 0 ? "down" : "up", Math.abs(dy)),
        );
        break;
      }
      case "wait": {
        const { ms } = action;
        steps.push(() => new Promise((resolve) => setTimeout(resolve, ms)));
        break;
      }
    }
  }
  return steps;
}

/** Runs the steps in order, stopping at the first that fails, as the contract's act reports it. */
export async function actComputerUse(
  sandbox: Sandbox,
  actions: DesktopAction[],
  steps: Step[],
): Promise<ActResult> {
  const total = actions.length;
  for (let completed = 0; completed < steps.length; completed++) {
    try {
      await (steps[completed] as Step)(sandbox);
    } catch (error) {
      const said = error instanceof Error ? error.message : String(error);
      return {
        completed,
        total,
        error: `action ${completed + 1} (${actions[completed]?.type ?? "?"}) failed: ${said.slice(-300)}`,
      };
    }
  }
  return { completed: total, total };
}
