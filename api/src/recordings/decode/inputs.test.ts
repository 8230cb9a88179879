import { deflateSync, constants as zlib } from "node:zlib";
import { describe, expect, it } from "vitest";
import { inputsOf } from "./index.ts";
import { bytes, client, clientCutText, end, keyEvent, pointerEvent, server } from "./testing/rfb-stream.ts";

const XK_Shift_L = 0xffe1;
const XK_Control_L = 0xffe3;
const XK_Return = 0xff0d;
const XK_BackSpace = 0xff08;
const XK_F5 = 0xffc2;
const XK_Left = 0xff51;
const XK_Tab = 0xff09;

/** Presses and releases each key at its time. */
const type = (at: number, ...keysyms: number[]) =>
  keysyms.flatMap((keysym, i) => [
    client(at + i * 100, keyEvent(keysym, true)),
    client(at + i * 100 + 50, keyEvent(keysym, false)),
  ]);
const chars = (text: string) => [...text].map((c) => c.codePointAt(0) as number);

describe("inputsOf", () => {
  it("merges characters typed in a row into one text item, shifted ones included", async () => {
    const records = [
      client(0, keyEvent(XK_Shift_L, true)),
      ...type(10, chars("H")[0] as number),
      client(200, keyEvent(XK_Shift_L, false)),
      ...type(300, ...chars("i there é")),
      client(1300, pointerEvent(0, 5, 5)), // a move: nothing to list, nothing broken
      ...type(1400, 0x0100_20ac, 0x010_0263a), // € and ☺ as Unicode keysyms
      server(1500, bytes([2])),
    ];
    expect(await inputsOf(records)).toEqual([{ at: 10, type: "text", text: "Hi there é€☺" }]);
  });

  it("breaks text at a pause of more than two seconds, a named key or a click", async () => {
    const records = [
      ...type(0, ...chars("ab")),
      ...type(2200, ...chars("cd")), // 2.1 s after "b"
      ...type(2400, XK_Return),
      ...type(2600, ...chars("e")),
      client(2700, pointerEvent(1, 40, 50)),
      client(2750, pointerEvent(0, 40, 50)),
      ...type(2800, ...chars("f")),
    ];
    expect(await inputsOf(records)).toEqual([
      { at: 0, type: "text", text: "ab" },
      { at: 2200, type: "text", text: "cd" },
      { at: 2400, type: "key", key: "Enter" },
      { at: 2600, type: "text", text: "e" },
      { at: 2700, type: "click", button: "left", x: 40, y: 50 },
      { at: 2800, type: "text", text: "f" },
    ]);
  });

  it("names other keys, with the modifiers held", async () => {
    const records = [
      ...type(0, XK_BackSpace, XK_F5, XK_Left),
      client(1000, keyEvent(XK_Control_L, true)),
      ...type(1010, ...chars("c")),
      client(1200, keyEvent(XK_Shift_L, true)),
      ...type(1210, ...chars("T")),
      client(1300, keyEvent(XK_Control_L, false)),
      ...type(1310, XK_Tab),
      client(1400, keyEvent(XK_Shift_L, false)),
      ...type(1500, 0x20, 0xfe12), // space types a character; an unnamed keysym shows its number
    ];
    expect((await inputsOf(records)).map((input) => ("key" in input ? input.key : input))).toEqual([
      "BackSpace",
      "F5",
      "Left",
      "Ctrl+C",
      "Ctrl+Shift+T",
      "Shift+Tab",
      { at: 1500, type: "text", text: " " },
      "0xfe12",
    ]);
  });

  it("lists button presses as clicks and scrolls, where they happened", async () => {
    const records = [
      client(0, pointerEvent(0b100, 7, 8)), // right down
      client(10, pointerEvent(0b101, 9, 9)), // left down as right is held
      client(20, pointerEvent(0, 9, 9)),
      client(30, pointerEvent(0b10, 1, 2)),
      client(40, pointerEvent(0, 1, 2)),
      client(50, pointerEvent(0b1000, 3, 4)),
      client(51, pointerEvent(0, 3, 4)),
      client(52, pointerEvent(0b10000, 3, 4)),
      client(53, pointerEvent(0, 3, 4)),
      client(54, pointerEvent(0b1000000, 3, 4)),
    ];
    expect(await inputsOf(records)).toEqual([
      { at: 0, type: "click", button: "right", x: 7, y: 8 },
      { at: 10, type: "click", button: "left", x: 9, y: 9 },
      { at: 30, type: "click", button: "middle", x: 1, y: 2 },
      { at: 50, type: "scroll", direction: "up", x: 3, y: 4 },
      { at: 52, type: "scroll", direction: "down", x: 3, y: 4 },
      { at: 54, type: "scroll", direction: "right", x: 3, y: 4 },
    ]);
  });

  it("lists a paste by its length, in the plain and the extended clipboard's form", async () => {
    const text = new TextEncoder().encode("héllo\0");
    const provided = deflateSync(bytes([0, 0, 0, text.length], text), { finishFlush: zlib.Z_SYNC_FLUSH });
    const flags = [0x10, 0, 0, 1]; // Provide, text
    const length = new Uint8Array(4);
    new DataView(length.buffer).setInt32(0, -(flags.length + provided.length)); // negative: extended
    const extended = bytes([6, 0, 0, 0], length, flags, provided);
    const notify = bytes([6, 0, 0, 0], [0xff, 0xff, 0xff, 0xfc], [0x08, 0, 0, 1]);
    // noVNC's Caps at connect: every action it supports (Provide among them), then the text size
    // it takes, not compressed: no paste
    const caps = bytes([6, 0, 0, 0], [0xff, 0xff, 0xff, 0xf8], [0x1f, 0, 0, 1], [0, 0x0a, 0, 0]);
    const records = [
      client(0, clientCutText("secret!")),
      client(5, caps),
      client(10, notify),
      client(20, extended),
      end(30),
    ];
    expect(await inputsOf(records)).toEqual([
      { at: 0, type: "paste", length: 7 },
      { at: 20, type: "paste", length: 5 },
    ]);
  });
});
