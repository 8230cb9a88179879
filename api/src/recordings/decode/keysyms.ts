import { KEYSYMS } from "./novnc.ts";

/** Modifier keys, by the name they take in a combination ("Ctrl+C"). */
export const MODIFIERS: ReadonlyMap<number, string> = new Map([
  [0xffe1, "Shift"],
  [0xffe2, "Shift"],
  [0xffe3, "Ctrl"],
  [0xffe4, "Ctrl"],
  [0xffe7, "Alt"], // Meta, which X gives the Alt keys of many keyboards
  [0xffe8, "Alt"],
  [0xffe9, "Alt"],
  [0xffea, "Alt"],
  [0xffeb, "Super"],
  [0xffec, "Super"],
  [0xffed, "Super"], // Hyper
  [0xffee, "Super"],
  // AltGr: it types characters rather than making combinations, so it is held without a name
  [0xfe03, ""],
  [0xff7e, ""],
]);

const UNICODE_KEYSYMS = 0x0100_0000;

/** The character a key types (Latin-1 keysyms, Unicode keysyms, the keypad's digits and signs), if any. */
export function keysymText(keysym: number): string | undefined {
  if ((keysym >= 0x20 && keysym <= 0x7e) || (keysym >= 0xa0 && keysym <= 0xff))
    return String.fromCharCode(keysym);
  const codePoint = keysym - UNICODE_KEYSYMS;
  if (codePoint >= 0xa0 && codePoint <= 0x10ffff) return String.fromCodePoint(codePoint);
  // KP_Multiply…KP_9 and KP_Equal carry their ASCII character in the low 7 bits
  if ((keysym >= 0xffaa && keysym <= 0xffb9) || keysym === 0xffbd) return String.fromCharCode(keysym & 0x7f);
  return undefined;
}

const FRIENDLY_NAMES: Readonly<Record<string, string>> = {
  Return: "Enter",
  KP_Enter: "Enter",
  space: "Space",
};

/** X's name of each keysym from noVNC's table; of two names for one keysym the later (Page_Up, not Prior). */
const NAMES = new Map<number, string>();
for (const [name, keysym] of Object.entries(KEYSYMS)) {
  const bare = name.replace(/^XK_/, "").replace(/^XF86XK_/, "XF86");
  NAMES.set(keysym, FRIENDLY_NAMES[bare] ?? bare);
}

/** How a key is shown: its character, upper-cased (as in "Ctrl+C"), or its name ("Enter", "F5", "Left"). */
export function keyName(keysym: number): string {
  const text = keysymText(keysym);
  if (text !== undefined && text.trim() !== "") return text.toUpperCase();
  return NAMES.get(keysym) ?? `0x${keysym.toString(16)}`;
}
