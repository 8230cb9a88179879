import { inflateSync, constants as zlib } from "node:zlib";
import { RecordKind } from "@cubicle/proxy/recording";
import { ClientMessageType } from "@cubicle/proxy/rfb";
import { RecordingDecodeError } from "./errors.ts";
import type { Records } from "./frame.ts";
import { keyName, keysymText, MODIFIERS } from "./keysyms.ts";

export type RecordingInput =
  | { at: number; type: "text"; text: string }
  | { at: number; type: "key"; key: string }
  | { at: number; type: "click"; button: "left" | "middle" | "right"; x: number; y: number }
  | { at: number; type: "scroll"; direction: "up" | "down" | "left" | "right"; x: number; y: number }
  | { at: number; type: "paste"; length: number };

/** Keys typed further apart than this start a new text item. */
const TEXT_GAP_MS = 2000;
/** PointerEvent's button mask, bit by bit (X's buttons 1–7). */
const BUTTONS = [
  { type: "click", button: "left" },
  { type: "click", button: "middle" },
  { type: "click", button: "right" },
  { type: "scroll", direction: "up" },
  { type: "scroll", direction: "down" },
  { type: "scroll", direction: "left" },
  { type: "scroll", direction: "right" },
] as const;
/**
 * The extended clipboard's Provide action with text: the only one that carries a paste. The action
 * is the flags' top byte; a Caps message (1 << 24) sets Provide there too, among the actions it
 * supports, and is not compressed, so Provide must be the only action set.
 */
const ACTIONS = 0xff00_0000;
const PROVIDE = 0x1000_0000;
const TEXT_FORMAT = 1;

/**
 * What the person did, from a control recording's CLIENT records: keys pressed (characters typed in
 * a row merged into one text item), buttons pressed, the wheel, and the clipboard sent, by its length
 * only. Releases and pointer moves are not listed.
 */
export async function inputsOf(records: Records): Promise<RecordingInput[]> {
  const inputs: RecordingInput[] = [];
  const held = new Map<number, string>();
  let buttons = 0;
  let text: { item: { at: number; type: "text"; text: string }; lastAt: number } | undefined;
  const add = (input: RecordingInput) => {
    inputs.push(input);
    text = undefined;
  };
  const key = (at: number, keysym: number, down: boolean) => {
    const modifier = MODIFIERS.get(keysym);
    if (modifier !== undefined) {
      if (down) held.set(keysym, modifier);
      else held.delete(keysym);
      return;
    }
    if (!down) return;
    const combination = new Set(held.values());
    combination.delete("");
    const typed = keysymText(keysym);
    if (typed !== undefined && [...combination].every((name) => name === "Shift")) {
      if (text && at - text.lastAt <= TEXT_GAP_MS) {
        text.item.text += typed;
        text.lastAt = at;
      } else {
        const item = { at, type: "text" as const, text: typed };
        add(item);
        text = { item, lastAt: at };
      }
      return;
    }
    const order = ["Ctrl", "Alt", "Super", "Shift"].filter((name) => combination.has(name));
    add({ at, type: "key", key: [...order, keyName(keysym)].join("+") });
  };

  for await (const record of records) {
    if (record.kind !== RecordKind.CLIENT) continue;
    const { at, bytes } = record;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    switch (bytes[0]) {
      case ClientMessageType.KeyEvent:
        if (bytes.length >= 8) key(at, view.getUint32(4), bytes[1] !== 0);
        break;
      case ClientMessageType.Qemu: // its extended key event (subtype 0) carries a keysym too
        if (bytes[1] === 0 && bytes.length >= 12) key(at, view.getUint32(4), view.getUint16(2) !== 0);
        break;
      case ClientMessageType.PointerEvent: {
        if (bytes.length < 6) break;
        const mask = view.getUint8(1) & 0x7f; // bit 7 marks noVNC's extended buttons (back, forward)
        const pressed = mask & ~buttons;
        buttons = mask;
        const x = view.getUint16(2);
        const y = view.getUint16(4);
        BUTTONS.forEach((button, bit) => {
          if (pressed & (1 << bit)) add({ at, ...button, x, y });
        });
        break;
      }
      case ClientMessageType.ClientCutText: {
        if (bytes.length < 8) break;
        const length = view.getInt32(4);
        if (length >= 0) add({ at, type: "paste", length });
        else if (
          bytes.length >= 12 &&
          (view.getUint32(8) & ACTIONS) >>> 0 === PROVIDE &&
          (view.getUint32(8) & TEXT_FORMAT) !== 0
        ) {
          add({ at, type: "paste", length: providedTextLength(bytes.subarray(12)) });
        }
        break;
      }
    }
  }
  return inputs;
}

/**
 * The extended clipboard's Provide: a zlib stream (flushed, not finished) of a 4-byte size and then
 * the text, UTF-8 ending in NUL, for each format; text comes first.
 */
function providedTextLength(deflated: Uint8Array): number {
  let data: Buffer;
  try {
    data = inflateSync(deflated, { finishFlush: zlib.Z_SYNC_FLUSH });
  } catch (error) {
    throw new RecordingDecodeError(`a clipboard message cannot be read: ${(error as Error).message}`);
  }
  const size = data.readUInt32BE(0);
  const text = data
    .subarray(4, 4 + size)
    .toString("utf8")
    .replace(/\0$/, "");
  return [...text].length;
}
