import { describe, expect, it } from "vitest";
import { Encoding, type PixelSizes, pixelSizes, ServerMessageFilter } from "./server-messages.ts";

const bytes = (...parts: (number | number[] | Buffer)[]) =>
  Buffer.concat(parts.map((part) => (Buffer.isBuffer(part) ? part : Buffer.from([part].flat()))));
const u16 = (n: number) => [n >> 8, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const filler = (n: number, start = 0x41) => Array.from({ length: n }, (_, i) => (start + i) & 0xff);

/** noVNC's pixel format: 32 bits, depth 24, 8 bits a channel (Tight pixels are 3 bytes). */
const FORMAT_32 = bytes([32, 24, 0, 1], u16(255), u16(255), u16(255), [16, 8, 0], [0, 0, 0]);
const FORMAT_16 = bytes([16, 16, 0, 1], u16(31), u16(63), u16(31), [11, 5, 0], [0, 0, 0]);
const SIZES_32 = pixelSizes(FORMAT_32) as PixelSizes;

const rect = (width: number, height: number, encoding: number, body: number[] | Buffer = []) =>
  bytes(u16(0), u16(0), u16(width), u16(height), u32(encoding >>> 0), Buffer.from(body));
const update = (...rectangles: Buffer[]) => bytes(0, 0, u16(rectangles.length), ...rectangles);

/** A FramebufferUpdate of one rectangle in every encoding a view session may get (32-bit pixels). */
const UPDATES: { name: string; message: Buffer }[] = [
  { name: "Raw", message: update(rect(2, 2, Encoding.Raw, filler(16))) },
  { name: "CopyRect", message: update(rect(8, 8, Encoding.CopyRect, [...u16(1), ...u16(2)])) },
  {
    name: "RRE",
    message: update(rect(8, 8, Encoding.RRE, [...u32(2), ...filler(4), ...filler(2 * 12)])),
  },
  {
    name: "Hextile (raw, solid, coloured subrects)",
    // 20x3: two tiles, 16x3 then 4x3
    message: update(
      rect(20, 3, Encoding.Hextile, [
        ...[1, ...filler(16 * 3 * 4)],
        ...[2 | 4 | 8 | 16, ...filler(4), ...filler(4), 2, ...filler(2 * 6)],
      ]),
    ),
  },
  { name: "Hextile (background only)", message: update(rect(4, 4, Encoding.Hextile, [2, ...filler(4)])) },
  { name: "Zlib", message: update(rect(64, 64, Encoding.Zlib, [...u32(5), ...filler(5)])) },
  { name: "ZRLE", message: update(rect(64, 64, Encoding.ZRLE, [...u32(7), ...filler(7)])) },
  { name: "Tight fill", message: update(rect(64, 64, Encoding.Tight, [0x80, ...filler(3)])) },
  {
    name: "Tight JPEG (two-byte length)",
    message: update(rect(64, 64, Encoding.Tight, [0x90, 0x81, 0x01, ...filler(129)])),
  },
  {
    name: "Tight basic, copy filter, compressed",
    message: update(rect(4, 4, Encoding.Tight, [0x01, 20, ...filler(20)])),
  },
  {
    name: "Tight basic, under 12 bytes uncompressed",
    message: update(rect(1, 3, Encoding.Tight, [0x00, ...filler(9)])),
  },
  {
    name: "Tight basic, two-colour palette",
    message: update(rect(10, 2, Encoding.Tight, [0x40 | 0x10, 1, 1, ...filler(6), ...filler(4)])),
  },
  {
    name: "Tight basic, 3-colour palette, compressed",
    message: update(rect(8, 8, Encoding.Tight, [0x40, 1, 2, ...filler(9), 3, ...filler(3)])),
  },
  {
    name: "Tight basic, gradient filter",
    message: update(rect(4, 4, Encoding.Tight, [0x40, 2, 30, ...filler(30)])),
  },
  {
    name: "Tight (three-byte length)",
    message: update(rect(64, 64, Encoding.Tight, [0x90, 0x80, 0x80, 0x01, ...filler(16384)])),
  },
  {
    name: "TightPNG",
    message: update(rect(64, 64, Encoding.TightPNG, [0xa0, 4, ...filler(4)])),
  },
  { name: "DesktopSize", message: update(rect(1024, 768, Encoding.DesktopSize)) },
  { name: "PointerPos", message: update(rect(5, 5, Encoding.PointerPos)) },
  {
    name: "Cursor",
    message: update(rect(9, 2, Encoding.Cursor, [...filler(9 * 2 * 4), ...filler(2 * 2)])),
  },
  { name: "XCursor", message: update(rect(9, 2, Encoding.XCursor, [...filler(6), ...filler(2 * 2 * 2)])) },
  { name: "XCursor (empty)", message: update(rect(0, 0, Encoding.XCursor)) },
  {
    name: "DesktopName",
    message: update(rect(0, 0, Encoding.DesktopName, [...u32(4), ...Buffer.from("desk")])),
  },
  {
    name: "ExtendedDesktopSize",
    message: update(rect(1280, 800, Encoding.ExtendedDesktopSize, [1, 0, 0, 0, ...filler(16)])),
  },
  {
    name: "LastRect ends the update early",
    message: bytes(0, 0, u16(0xffff), rect(2, 1, Encoding.Raw, filler(8)), rect(0, 0, Encoding.LastRect)),
  },
];

const OTHERS: { name: string; message: Buffer }[] = [
  { name: "SetColourMapEntries", message: bytes(1, 0, u16(0), u16(2), filler(12)) },
  { name: "Bell", message: bytes(2) },
  { name: "EndOfContinuousUpdates", message: bytes(150) },
  { name: "ServerFence", message: bytes(248, [0, 0, 0], u32(0x80000001), 2, filler(2)) },
];

const CUT_TEXTS: { name: string; message: Buffer }[] = [
  { name: "ServerCutText", message: bytes(3, [0, 0, 0], u32(6), Buffer.from("secret")) },
  {
    name: "ServerCutText (extended clipboard)",
    message: bytes(3, [0, 0, 0], u32(-12 >>> 0), u32(0x10000001), u32(4), filler(4)),
  },
];

function feed(filter: ServerMessageFilter, chunks: Buffer[]) {
  const forwarded: Buffer[] = [];
  const dropped: number[] = [];
  for (const chunk of chunks) {
    const result = filter.push(chunk);
    if ("violation" in result)
      return { forwarded: Buffer.concat(forwarded), dropped, violation: result.violation };
    for (const step of result.steps) {
      if ("forward" in step) forwarded.push(Buffer.from(step.forward));
      else dropped.push(step.dropped);
    }
  }
  return { forwarded: Buffer.concat(forwarded), dropped };
}

/** Every way of cutting `data` in two, and one byte at a time. */
const cuts = (data: Buffer) => [
  ...Array.from({ length: data.length - 1 }, (_, i) => [data.subarray(0, i + 1), data.subarray(i + 1)]),
  [...data].map((byte) => Buffer.from([byte])),
];

describe("ServerMessageFilter", () => {
  describe.each([...UPDATES, ...OTHERS])("$name", ({ message }) => {
    it("is passed on whole, wherever the stream is cut", () => {
      expect(feed(new ServerMessageFilter(SIZES_32), [message])).toEqual({ forwarded: message, dropped: [] });
      // the big Tight rectangle is cut in a few places only: its 16 KiB of payload are alike
      for (const chunks of message.length > 1000 ? cuts(message).slice(0, 12) : cuts(message)) {
        expect(feed(new ServerMessageFilter(SIZES_32), chunks)).toEqual({ forwarded: message, dropped: [] });
      }
    });
  });

  describe.each(CUT_TEXTS)("$name", ({ message }) => {
    it("is withheld between updates, wherever the stream is cut", () => {
      const before = UPDATES[0]?.message as Buffer;
      const after = UPDATES[3]?.message as Buffer;
      const stream = Buffer.concat([before, message, after]);
      const expected = { forwarded: Buffer.concat([before, after]), dropped: [3] };
      expect(feed(new ServerMessageFilter(SIZES_32), [stream])).toEqual(expected);
      for (const chunks of cuts(stream))
        expect(feed(new ServerMessageFilter(SIZES_32), chunks)).toEqual(expected);
    });
  });

  it("frames every message of a long mixed stream, withholding only the cut texts", () => {
    const all = [...UPDATES, ...OTHERS, ...CUT_TEXTS, ...UPDATES.slice(0, 5), ...CUT_TEXTS, ...OTHERS];
    const stream = Buffer.concat(all.map((sample) => sample.message));
    const kept = Buffer.concat(all.filter((s) => !s.name.startsWith("ServerCutText")).map((s) => s.message));
    const chunks = Array.from({ length: Math.ceil(stream.length / 1000) }, (_, i) =>
      stream.subarray(i * 1000, (i + 1) * 1000),
    );
    expect(feed(new ServerMessageFilter(SIZES_32), chunks)).toEqual({
      forwarded: kept,
      dropped: [3, 3, 3, 3],
    });
  });

  it("sizes pixels by the pixel format the client set", () => {
    const raw16 = update(rect(2, 2, Encoding.Raw, filler(8)));
    const filter = new ServerMessageFilter(SIZES_32);
    filter.usePixelSizes(pixelSizes(FORMAT_16) as PixelSizes);
    const cut = bytes(3, [0, 0, 0], u32(1), [0x78]);
    expect(feed(filter, [Buffer.concat([raw16, cut, raw16])])).toEqual({
      forwarded: Buffer.concat([raw16, raw16]),
      dropped: [3],
    });
  });

  it.each([
    ["an unknown message type", bytes(99)],
    ["an encoding a view session never asked for", update(rect(4, 4, 21 /* JPEG */, filler(4)))],
    ["the extended clipboard as a rectangle", update(rect(0, 0, Encoding.ExtendedClipboard))],
    ["a compression Tight does not have", update(rect(4, 4, Encoding.Tight, [0xb0]))],
    ["PNG in plain Tight", update(rect(4, 4, Encoding.Tight, [0xa0, 1, 0]))],
    ["an unknown Tight filter", update(rect(4, 4, Encoding.Tight, [0x40, 3]))],
    ["a fence payload over 64 bytes", bytes(248, [0, 0, 0], u32(0), 65, filler(65))],
  ])("refuses %s, and everything after it", (_, message) => {
    const filter = new ServerMessageFilter(SIZES_32);
    const outcome = feed(filter, [message]);
    expect(outcome.violation).toMatch(/^the screen sent what a view session cannot frame: /);
    expect("violation" in filter.push(bytes(2))).toBe(true);
  });

  it("knows which pixel formats RFB has", () => {
    expect(pixelSizes(FORMAT_32)).toEqual({ bytesPerPixel: 4, tightPixelBytes: 3 });
    expect(pixelSizes(FORMAT_16)).toEqual({ bytesPerPixel: 2, tightPixelBytes: 2 });
    expect(pixelSizes(bytes([24], filler(15)))).toBeUndefined();
  });
});
