import { describe, expect, it } from "vitest";
import { ProviderError } from "../contract/index.ts";
import { validateActions } from "./actions.ts";
import { shellQuote } from "./shell-quote.ts";
import { actionScript, xdotoolArgs } from "./xdotool.ts";

describe("shellQuote", () => {
  it.each(["plain", "it's", "$(rm -rf /)", "`x`", "a\nb", "'", ""])("keeps %j one literal word", (value) => {
    const quoted = shellQuote(value);
    expect(quoted.startsWith("'")).toBe(true);
    // only the '\'' sequence ever leaves the quotes
    expect(quoted.slice(1, -1).replaceAll("'\\''", "")).not.toContain("'");
  });
});

describe("xdotool actions", () => {
  it("maps clicks with modifiers, scrolls and keys", () => {
    expect(xdotoolArgs({ type: "click", x: 10, y: 20, modifiers: ["ctrl", "shift"] })).toEqual([
      ...["mousemove", "10", "20", "keydown", "ctrl+shift", "click", "1", "keyup", "ctrl+shift"],
    ]);
    expect(xdotoolArgs({ type: "scroll", x: 1, y: 2, dx: 0, dy: -3 })).toEqual([
      ...["mousemove", "1", "2", "click", "--repeat", "3", "--delay", "20", "4"],
    ]);
    expect(xdotoolArgs({ type: "key", key: "Return", modifiers: ["alt"] })).toEqual([
      "key",
      "--clearmodifiers",
      "alt+Return",
    ]);
    expect(xdotoolArgs({ type: "wait", ms: 5 })).toBeNull();
  });

  it("builds one script that reports each completed action", () => {
    const { script, deadlineMs } = actionScript([
      { type: "type", text: "it's $(danger)" },
      { type: "wait", ms: 250 },
      { type: "key", key: "Return" },
    ]);
    expect(script).toContain("xdotool 'type' '--delay' '5' '--' 'it'\\''s $(danger)' || exit 3");
    expect(script).toContain("sleep 0.250");
    expect(script.split("\n").filter((line) => line === "echo ok")).toHaveLength(3);
    expect(deadlineMs).toBeGreaterThan(20_000);
  });
});

describe("validateActions", () => {
  it("refuses the whole batch when one action is wrong", () => {
    try {
      validateActions([{ type: "move", x: 1, y: 1 }, { type: "teleport" }]);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as ProviderError).code).toBe("INVALID_ACTIONS");
    }
  });

  it("allows at most 24 actions and at least one", () => {
    expect(validateActions(Array(24).fill({ type: "wait", ms: 0 }))).toHaveLength(24);
    expect(() => validateActions(Array(25).fill({ type: "wait", ms: 0 }))).toThrow(/not run/);
    expect(() => validateActions([])).toThrow(/not run/);
  });

  it("refuses text with NUL and keys that are not keysym names", () => {
    expect(() => validateActions([{ type: "type", text: "a\0b" }])).toThrow(/NUL/);
    expect(() => validateActions([{ type: "key", key: "a b" }])).toThrow(/keysym/);
  });
});
