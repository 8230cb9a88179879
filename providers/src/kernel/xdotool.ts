import type { DesktopAction, Modifier, MouseButton } from "../contract/index.ts";
import { shellQuote } from "./shell-quote.ts";

const BUTTON: Record<MouseButton, string> = { left: "1", middle: "2", right: "3" };

const at = (x: number, y: number) => ["mousemove", String(x), String(y)];

/** Holds the modifiers down around `inner` (xdotool chains commands in one invocation). */
function withModifiers(modifiers: Modifier[] | undefined, inner: string[]): string[] {
  if (!modifiers || modifiers.length === 0) return inner;
  const keys = modifiers.join("+");
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
    case "key":
      return ["key", "--clearmodifiers", [...(action.modifiers ?? []), action.key].join("+")];
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

/** An upper bound for one action, so a stuck X server cannot hang a batch. */
export function actionDeadlineMs(action: DesktopAction): number {
  if (action.type === "wait") return action.ms + 1_000;
  return 10_000 + (action.type === "type" ? action.text.length * 25 : 0);
}

/**
 * One shell script that runs a validated batch in order inside the computer, printing `ok` after
 * each action that completed and stopping at the first that fails: one exec per batch instead of
 * one per action. Every argument is a single-quoted word, so no text can become shell syntax.
 */
export function actionScript(actions: DesktopAction[]): { script: string; deadlineMs: number } {
  const lines = ["set -u"];
  let deadlineMs = 5_000;
  for (const action of actions) {
    deadlineMs += actionDeadlineMs(action);
    const args = xdotoolArgs(action);
    if (args === null) {
      if (action.type === "wait") lines.push(`sleep ${(action.ms / 1000).toFixed(3)}`);
    } else {
      const seconds = Math.ceil(actionDeadlineMs(action) / 1000);
      lines.push(`timeout -s KILL ${seconds} xdotool ${args.map(shellQuote).join(" ")} || exit 3`);
    }
    lines.push("echo ok");
  }
  return { script: lines.join("\n"), deadlineMs };
}
