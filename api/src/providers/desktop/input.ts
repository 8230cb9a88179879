import type { DesktopAction, Modifier, MouseButton } from "../contract.ts";

const BUTTON: Record<MouseButton, string> = { left: "1", middle: "2", right: "3" };
const MODIFIER: Record<Modifier, string> = { ctrl: "ctrl", alt: "alt", shift: "shift", super: "super" };

const at = (x: number, y: number) => ["mousemove", String(x), String(y)];

/** Holds the modifiers down around `inner` (xdotool chains commands in one invocation). */
function withModifiers(modifiers: Modifier[] | undefined, inner: string[]): string[] {
  if (!modifiers || modifiers.length === 0) return inner;
  const keys = modifiers.map((modifier) => MODIFIER[modifier]).join("+");
  return ["keydown", keys, ...inner, "keyup", keys];
}

function clicks(times: number, button: string): string[] {
  return times > 0 ? ["click", "--repeat", String(times), "--delay", "20", button] : [];
}

/** The xdotool arguments for one validated action; null for `wait`, which needs no X call. */
export function xdotoolArgs(action: DesktopAction): string[] | null {
  switch (action.type) {
    case "click":
      return [...at(action.x, action.y), ...withModifiers(action.modifiers, ["click", "1"])];
    case "double_click":
      return [
        ...at(action.x, action.y),
        ...withModifiers(action.modifiers, ["click", "--repeat", "2", "--delay", "80", "1"]),
      ];
    case "right_click":
      return [...at(action.x, action.y), ...withModifiers(action.modifiers, ["click", "3"])];
    case "middle_click":
      return [...at(action.x, action.y), ...withModifiers(action.modifiers, ["click", "2"])];
    case "move":
      return at(action.x, action.y);
    case "mouse_down":
    case "mouse_up": {
      const press = [action.type === "mouse_down" ? "mousedown" : "mouseup", BUTTON[action.button]];
      return action.x !== undefined && action.y !== undefined ? [...at(action.x, action.y), ...press] : press;
    }
    case "drag":
      // short pauses so applications see a press, a motion and a release, not one jump
      return [
        ...at(action.from.x, action.from.y),
        "mousedown",
        "1",
        "sleep",
        "0.05",
        ...at(action.to.x, action.to.y),
        "sleep",
        "0.05",
        "mouseup",
        "1",
      ];
    case "type":
      return ["type", "--delay", "5", "--", action.text];
    case "key": {
      const combo = [...(action.modifiers ?? []).map((modifier) => MODIFIER[modifier]), action.key].join("+");
      return ["key", "--clearmodifiers", combo];
    }
    case "scroll":
      // X has no scroll events: buttons 4/5 scroll up/down, 6/7 left/right, one notch per click
      return [
        ...at(action.x, action.y),
        ...clicks(Math.abs(action.dy), action.dy > 0 ? "5" : "4"),
        ...clicks(Math.abs(action.dx), action.dx > 0 ? "7" : "6"),
      ];
    case "wait":
      return null;
  }
}

/** An upper bound for one xdotool call, so a stuck X server cannot hang a batch. */
export function actionDeadlineMs(action: DesktopAction): number {
  return 10_000 + (action.type === "type" ? action.text.length * 25 : 0);
}
