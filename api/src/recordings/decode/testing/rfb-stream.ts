/**
 * Builds RFB byte streams and recordings for the decoder's tests: ServerInit, updates with
 * rectangles in each encoding, the client messages a viewer sends, and records around them.
 */
import { deflateSync } from "node:zlib";
import { concatBytes, type RecordingRecord, RecordKind } from "@cubicle/proxy/recording";
import type { PixelFormat } from "@cubicle/proxy/rfb";

/** What noVNC asks for: 32 bits, red, green, blue in bytes 0, 1, 2. */
export const NOVNC_FORMAT: PixelFormat = {
  bitsPerPixel: 32,
  depth: 24,
  bigEndian: false,
  trueColour: true,
  redMax: 255,
  greenMax: 255,
  blueMax: 255,
  redShift: 0,
  greenShift: 8,
  blueShift: 16,
};

/** x11vnc's own on a 24-bit X screen: blue, green, red in bytes 0, 1, 2. */
export const X11_FORMAT: PixelFormat = { ...NOVNC_FORMAT, redShift: 16, blueShift: 0 };

export type Rgb = readonly [number, number, number];

const u8 = (value: number) => [value & 0xff];
const u16 = (value: number) => [(value >> 8) & 0xff, value & 0xff];
const u32 = (value: number) => [
  (value >>> 24) & 0xff,
  (value >>> 16) & 0xff,
  (value >>> 8) & 0xff,
  value & 0xff,
];
export const bytes = (...parts: Array<ArrayLike<number>>): Uint8Array =>
  concatBytes(parts.map((part) => Uint8Array.from(part)));

export function pixelFormat(format: PixelFormat): Uint8Array {
  return bytes(
    u8(format.bitsPerPixel),
    u8(format.depth),
    u8(format.bigEndian ? 1 : 0),
    u8(format.trueColour ? 1 : 0),
    u16(format.redMax),
    u16(format.greenMax),
    u16(format.blueMax),
    [format.redShift, format.greenShift, format.blueShift, 0, 0, 0],
  );
}

export function serverInit(
  width: number,
  height: number,
  format = NOVNC_FORMAT,
  name = "screen",
): Uint8Array {
  const title = new TextEncoder().encode(name);
  return bytes(u16(width), u16(height), pixelFormat(format), u32(title.length), title);
}

/** A 32-bit pixel of `format` (byte-aligned colours), in the byte order the format says. */
export function pixel([r, g, b]: Rgb, format = NOVNC_FORMAT): number[] {
  const value = (r << format.redShift) | (g << format.greenShift) | (b << format.blueShift);
  const little = [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff];
  return format.bigEndian ? little.reverse() : little;
}

export function framebufferUpdate(...rects: Uint8Array[]): Uint8Array {
  return bytes([0, 0], u16(rects.length), ...rects);
}

export function rect(
  x: number,
  y: number,
  width: number,
  height: number,
  encoding: number,
  body: ArrayLike<number> = [],
) {
  return bytes(u16(x), u16(y), u16(width), u16(height), u32(encoding), body);
}

export const raw = (width: number, height: number, colour: Rgb, format = NOVNC_FORMAT) =>
  Array.from({ length: width * height }, () => pixel(colour, format)).flat();

/** Tight's compact length: 7 bits a byte, up to three bytes. */
function compactLength(length: number): number[] {
  const out = [length & 0x7f];
  if (length > 0x7f) {
    out[0] = (out[0] as number) | 0x80;
    out.push((length >> 7) & 0x7f);
    if (length > 0x3fff) {
      out[1] = (out[1] as number) | 0x80;
      out.push(length >> 14);
    }
  }
  return out;
}

export const tightFill = ([r, g, b]: Rgb) => [0x80, r, g, b];

/** Basic compression, copy filter, zlib stream 0 (reset first): width×height TPIXELs, red, green, blue. */
export function tightBasic(pixels: Rgb[]): number[] {
  const data = deflateSync(Uint8Array.from(pixels.flat()));
  return [0x01, ...compactLength(data.length), ...data];
}

/** Basic compression with the palette filter and two colours: one bit a pixel, rows padded to a byte. */
export function tightMono(width: number, [first, second]: [Rgb, Rgb], rows: number[][]): number[] {
  const packed = rows.flatMap((row) => {
    const out = new Array<number>(Math.ceil(width / 8)).fill(0);
    row.forEach((bit, x) => {
      out[x >> 3] = (out[x >> 3] as number) | (bit << (7 - (x & 7)));
    });
    return out;
  });
  if (packed.length >= 12)
    throw new Error("a test's mono rectangle is sent without zlib: keep it under 12 bytes");
  return [0x40, 1, 1, ...first, ...second, ...packed];
}

export const tightJpeg = (jpeg: Uint8Array) => [0x90, ...compactLength(jpeg.length), ...jpeg];

/** ZRLE: its zlib stream of 64×64 tiles; each tile here solid (subencoding 1) or raw (0). */
export function zrle(tiles: Array<{ solid: number[] } | { raw: number[][] }>): number[] {
  const data = tiles.flatMap((tile) => ("solid" in tile ? [1, ...tile.solid] : [0, ...tile.raw.flat()]));
  const deflated = deflateSync(Uint8Array.from(data));
  return [...u32(deflated.length), ...deflated];
}

/** ZRLE's CPIXEL: the three bytes of a pixel that hold colour (here the low three, little-endian). */
export const cpixel = (colour: Rgb, format = NOVNC_FORMAT) => pixel(colour, format).slice(0, 3);

export const setPixelFormat = (format: PixelFormat) => bytes([0, 0, 0, 0], pixelFormat(format));
export const keyEvent = (keysym: number, down: boolean) => bytes([4, down ? 1 : 0, 0, 0], u32(keysym));
export const pointerEvent = (mask: number, x: number, y: number) => bytes([5, mask], u16(x), u16(y));
export const clientCutText = (text: string) =>
  bytes([6, 0, 0, 0], u32(text.length), new TextEncoder().encode(text));

export const server = (at: number, data: Uint8Array): RecordingRecord => ({
  kind: RecordKind.SERVER,
  at,
  bytes: data,
});
export const client = (at: number, data: Uint8Array): RecordingRecord => ({
  kind: RecordKind.CLIENT,
  at,
  bytes: data,
});
export const end = (at: number): RecordingRecord => ({ kind: RecordKind.END, at, complete: true });

/** A recording of one screen: ServerInit at 0, then the client's and server's messages at their times. */
export function recording(width: number, height: number, ...rest: RecordingRecord[]): RecordingRecord[] {
  return [server(0, serverInit(width, height)), ...rest];
}
