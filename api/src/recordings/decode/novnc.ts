/**
 * noVNC's own decoders and keysym table (the library the dashboard's viewer and player run), loaded
 * for Node. The package exports only its browser entry (core/rfb.js, which needs a DOM), so the
 * modules are imported by file from beside it.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Encoding } from "@cubicle/proxy/rfb";
import type { Display } from "./framebuffer.ts";
import type { ReceiveQueue } from "./receive-queue.ts";

/** One of noVNC's core/decoders/*.js: reads a rectangle from the queue, draws it, false when short of bytes. */
export interface NoVncDecoder {
  decodeRect(
    x: number,
    y: number,
    width: number,
    height: number,
    sock: ReceiveQueue,
    display: Display,
    depth: number,
  ): boolean;
}
type DecoderClass = new () => NoVncDecoder;

const core = dirname(createRequire(import.meta.url).resolve("@novnc/novnc"));
const load = async <T>(path: string): Promise<T> =>
  ((await import(pathToFileURL(join(core, path)).href)) as { default: T }).default;

/** noVNC's decoder file for each encoding of pixels it reads. */
const DECODER_FILES: ReadonlyArray<readonly [number, string]> = [
  [Encoding.Raw, "raw"],
  [Encoding.CopyRect, "copyrect"],
  [Encoding.RRE, "rre"],
  [Encoding.Hextile, "hextile"],
  [Encoding.Zlib, "zlib"],
  [Encoding.Tight, "tight"],
  [Encoding.ZRLE, "zrle"],
  [Encoding.JPEG, "jpeg"],
  [Encoding.TightPNG, "tightpng"],
];

// noVNC's logging module binds `window.console` as it loads, and Node has no window: one stands in
// while the modules load (when the api imports this, before it serves anything) and is then
// removed, so that no other library takes the api for a browser.
const hadWindow = "window" in globalThis;
if (!hadWindow) Object.defineProperty(globalThis, "window", { value: globalThis, configurable: true });
let decoderClasses: Array<readonly [number, DecoderClass]>;
let keysyms: Record<string, number>;
try {
  [decoderClasses, keysyms] = await Promise.all([
    Promise.all(
      DECODER_FILES.map(
        async ([encoding, file]) => [encoding, await load<DecoderClass>(`decoders/${file}.js`)] as const,
      ),
    ),
    load<Record<string, number>>("input/keysym.js"),
  ]);
} finally {
  if (!hadWindow) Reflect.deleteProperty(globalThis, "window");
}

/**
 * A fresh decoder for each pixel encoding, keyed by its number. Like noVNC's RFB, one screen keeps
 * one set for its whole stream: Tight's, ZRLE's and Zlib's zlib streams and JPEG's tables carry over
 * from one rectangle to the next.
 */
export function createDecoders(): Map<number, NoVncDecoder> {
  return new Map(decoderClasses.map(([encoding, Decoder]) => [encoding, new Decoder()]));
}

/** X keysyms by name, as noVNC's core/input/keysym.js lists them (`XK_Return`, `XF86XK_AudioMute`…). */
export const KEYSYMS: Readonly<Record<string, number>> = keysyms;
