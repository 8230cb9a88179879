import type { PixelFormat } from "@cubicle/proxy/rfb";
import { RecordingDecodeError } from "./errors.ts";
import type { Channels } from "./framebuffer.ts";

/** How noVNC's decoders read pixels in a format. */
export interface DecoderView {
  /** What noVNC's RFB passes its decoders: 24, or 8 for its own low-colour format. */
  depth: 24 | 8;
  bytesPerPixel: number;
  /** Where red, green and blue are in a PIXEL as the decoders read it (Raw, RRE, Hextile, Zlib). */
  pixel: Channels;
  /** …and in ZRLE's 3-byte CPIXEL. Tight's TPIXEL, JPEG and PNG are always red, green, blue. */
  compactPixel: Channels;
}

/**
 * noVNC's decoders read the two formats noVNC asks for: 32 bits with red, green, blue in the first
 * three bytes, and 8 bits with two bits each (Raw only). A server draws in its own format until the
 * client's SetPixelFormat, so the usual 32-bit true-colour formats with the colours in other bytes
 * are read too, by telling the framebuffer where each colour is.
 */
export function decoderView(format: PixelFormat): DecoderView {
  const { redShift: r, greenShift: g, blueShift: b } = format;
  const maxes = [format.redMax, format.greenMax, format.blueMax];
  if (
    format.trueColour &&
    format.bitsPerPixel === 8 &&
    maxes.every((max) => max === 3) &&
    r === 0 &&
    g === 2 &&
    b === 4
  ) {
    return { depth: 8, bytesPerPixel: 1, pixel: [0, 1, 2], compactPixel: [0, 1, 2] };
  }
  const shifts = [r, g, b];
  if (
    !format.trueColour ||
    format.bitsPerPixel !== 32 ||
    format.depth !== 24 ||
    !maxes.every((max) => max === 255) ||
    !shifts.every((shift) => shift % 8 === 0 && shift <= 24) ||
    new Set(shifts).size !== 3
  ) {
    throw new RecordingDecodeError(
      `pixels of ${format.bitsPerPixel} bits, depth ${format.depth}` +
        `${format.trueColour ? `, maxima ${maxes.join("/")}, shifts ${shifts.join("/")}` : " with a colour map"}` +
        " cannot be decoded",
    );
  }
  const byteOf = (shift: number) => (format.bigEndian ? 3 - shift / 8 : shift / 8);
  const pixel = shifts.map(byteOf) as unknown as Channels;
  // a CPIXEL is the three bytes of the pixel that hold the colours: the least significant three
  // when no colour is in the top byte, else the most significant three
  const lowThree = shifts.every((shift) => shift <= 16);
  const firstByte = lowThree === format.bigEndian ? 1 : 0;
  return {
    depth: 24,
    bytesPerPixel: 4,
    pixel,
    compactPixel: pixel.map((at) => at - firstByte) as unknown as Channels,
  };
}
