/**
 * Frames the server→client RFB stream of a `view` session so that the proxy can withhold the
 * clipboard from it: ServerCutText (in its plain and its extended-clipboard form) never reaches a
 * viewer, whatever the VNC server was told. The view servers are started without clipboard
 * exchange already; this is the second lock, for a server that was not.
 *
 * Finding message boundaries means sizing every FramebufferUpdate rectangle, which depends on its
 * encoding (and for some on the pixel format). Rather than follow every encoding a server might
 * know, a view session may only negotiate the ones listed here (`VIEW_ENCODINGS`; the client
 * filter strips the rest from its SetEncodings, the extended clipboard among them), and anything
 * else in the stream ends the session: a mis-framed byte would let the rest of the stream, a
 * ServerCutText included, pass as pixels.
 *
 * The walker is a generator that asks for bytes to look at (`peek`), then passes them on (`keep`)
 * or withholds them (`drop`); large payloads are passed on as they arrive, never buffered.
 */

import { Encoding, readPixelFormat, ServerMessageType } from "./protocol.ts";

export { Encoding, ServerMessageType };

/** Hints that shape the pixels a server sends, with nothing of their own in the stream. */
const isLevelHint = (encoding: number) =>
  (encoding >= -32 && encoding <= -23) || (encoding >= -256 && encoding <= -247);

const FRAMED_ENCODINGS: ReadonlySet<number> = new Set([
  Encoding.Raw,
  Encoding.CopyRect,
  Encoding.RRE,
  Encoding.Hextile,
  Encoding.Zlib,
  Encoding.Tight,
  Encoding.ZRLE,
  Encoding.TightPNG,
  Encoding.DesktopSize,
  Encoding.LastRect,
  Encoding.PointerPos,
  Encoding.Cursor,
  Encoding.XCursor,
  Encoding.DesktopName,
  Encoding.ExtendedDesktopSize,
  Encoding.Fence,
  Encoding.ContinuousUpdates,
]);

/** Whether a view session may ask for the encoding: the proxy can frame what it makes the server send. */
export const viewMayNegotiate = (encoding: number) => FRAMED_ENCODINGS.has(encoding) || isLevelHint(encoding);

const MAX_FENCE_PAYLOAD = 64;

/** What the sizes of pixel data depend on, from a 16-byte PIXEL_FORMAT (ServerInit, SetPixelFormat). */
export interface PixelSizes {
  bytesPerPixel: number;
  /** Tight's TPIXEL: 3 bytes for 32-bit true colour with depth 24 and 8 bits per channel. */
  tightPixelBytes: number;
}

/** Undefined for a bits-per-pixel value RFB does not have (it allows 8, 16 and 32). */
export function pixelSizes(format: Buffer): PixelSizes | undefined {
  const { bitsPerPixel, depth, trueColour, redMax, greenMax, blueMax } = readPixelFormat(format);
  if (bitsPerPixel !== 8 && bitsPerPixel !== 16 && bitsPerPixel !== 32) return undefined;
  const bytesPerPixel = bitsPerPixel / 8;
  const packed =
    bitsPerPixel === 32 &&
    depth === 24 &&
    trueColour &&
    [redMax, greenMax, blueMax].every((max) => max === 255);
  return { bytesPerPixel, tightPixelBytes: packed ? 3 : bytesPerPixel };
}

type Need = { peek: number } | { keep: number } | { drop: number };
const EMPTY = Buffer.alloc(0);
type Walker = Generator<Need, never, Buffer>;

class Unframeable extends Error {}

/** The next `bytes` bytes, looked at and then passed on. */
function* read(bytes: number): Generator<Need, Buffer, Buffer> {
  const data = yield { peek: bytes };
  yield { keep: bytes };
  return data;
}

/** Told the framebuffer's new size when the server announces one (DesktopSize, ExtendedDesktopSize). */
export type DesktopSizeListener = (width: number, height: number) => void;

function* walkServerMessages(
  sizes: () => PixelSizes,
  onDesktopSize: DesktopSizeListener | undefined,
): Walker {
  for (;;) {
    const type = (yield { peek: 1 }).readUInt8(0);
    switch (type) {
      case ServerMessageType.FramebufferUpdate:
        yield* framebufferUpdate(sizes(), onDesktopSize);
        break;
      case ServerMessageType.SetColourMapEntries: {
        const header = yield* read(6);
        yield { keep: 6 * header.readUInt16BE(4) };
        break;
      }
      case ServerMessageType.Bell:
      case ServerMessageType.EndOfContinuousUpdates:
        yield { keep: 1 };
        break;
      case ServerMessageType.ServerCutText: {
        // the extended-clipboard form has a negative length whose magnitude is the payload's
        const length = (yield { peek: 8 }).readInt32BE(4);
        yield { drop: 8 + Math.abs(length) };
        break;
      }
      case ServerMessageType.ServerFence: {
        const payload = (yield* read(9)).readUInt8(8);
        if (payload > MAX_FENCE_PAYLOAD) throw new Unframeable(`server fence payload of ${payload} bytes`);
        yield { keep: payload };
        break;
      }
      default:
        throw new Unframeable(`server message type ${type}`);
    }
  }
}

function* framebufferUpdate(
  sizes: PixelSizes,
  onDesktopSize: DesktopSizeListener | undefined,
): Generator<Need, void, Buffer> {
  const count = (yield* read(4)).readUInt16BE(2);
  for (let i = 0; i < count; i++) {
    const header = yield* read(12);
    const width = header.readUInt16BE(4);
    const height = header.readUInt16BE(6);
    const encoding = header.readInt32BE(8);
    if (encoding === Encoding.LastRect) return;
    // an ExtendedDesktopSize refusing a client's request still carries the current size
    if (encoding === Encoding.DesktopSize || encoding === Encoding.ExtendedDesktopSize)
      onDesktopSize?.(width, height);
    yield* rectangle(encoding, width, height, sizes);
  }
}

function* rectangle(
  encoding: number,
  width: number,
  height: number,
  { bytesPerPixel, tightPixelBytes }: PixelSizes,
): Generator<Need, void, Buffer> {
  switch (encoding) {
    case Encoding.Raw:
      yield { keep: width * height * bytesPerPixel };
      return;
    case Encoding.CopyRect:
      yield { keep: 4 };
      return;
    case Encoding.RRE: {
      const subrects = (yield* read(4)).readUInt32BE(0);
      yield { keep: bytesPerPixel + subrects * (bytesPerPixel + 8) };
      return;
    }
    case Encoding.Hextile:
      yield* hextile(width, height, bytesPerPixel);
      return;
    case Encoding.Zlib:
    case Encoding.ZRLE:
      yield { keep: (yield* read(4)).readUInt32BE(0) };
      return;
    case Encoding.Tight:
    case Encoding.TightPNG:
      yield* tight(width, height, tightPixelBytes, encoding === Encoding.TightPNG);
      return;
    case Encoding.DesktopSize:
    case Encoding.PointerPos:
      return;
    case Encoding.Cursor:
      yield { keep: width * height * bytesPerPixel + Math.ceil(width / 8) * height };
      return;
    case Encoding.XCursor:
      if (width * height > 0) yield { keep: 6 + 2 * Math.ceil(width / 8) * height };
      return;
    case Encoding.DesktopName:
      yield { keep: (yield* read(4)).readUInt32BE(0) };
      return;
    case Encoding.ExtendedDesktopSize:
      yield { keep: 16 * (yield* read(4)).readUInt8(0) };
      return;
    default:
      throw new Unframeable(`rectangle encoding ${encoding}`);
  }
}

function* hextile(width: number, height: number, bytesPerPixel: number): Generator<Need, void, Buffer> {
  for (let y = 0; y < height; y += 16) {
    for (let x = 0; x < width; x += 16) {
      const subencoding = (yield* read(1)).readUInt8(0);
      if (subencoding & 1) {
        yield { keep: Math.min(16, width - x) * Math.min(16, height - y) * bytesPerPixel };
        continue;
      }
      const colours = ((subencoding & 2) !== 0 ? 1 : 0) + ((subencoding & 4) !== 0 ? 1 : 0);
      yield { keep: colours * bytesPerPixel };
      if (subencoding & 8) {
        const subrects = (yield* read(1)).readUInt8(0);
        yield { keep: subrects * ((subencoding & 16 ? bytesPerPixel : 0) + 2) };
      }
    }
  }
}

/** Tight and TightPNG (the RFB community spec, as libvncserver writes and noVNC reads them). */
function* tight(
  width: number,
  height: number,
  pixelBytes: number,
  png: boolean,
): Generator<Need, void, Buffer> {
  const compression = (yield* read(1)).readUInt8(0) >> 4;
  if (compression === 0x08) {
    yield { keep: pixelBytes }; // fill
    return;
  }
  if (compression === 0x09 || (png && compression === 0x0a)) {
    yield* compactLengthData(); // JPEG or PNG
    return;
  }
  if (compression & 0x08) throw new Unframeable(`tight compression ${compression}`);
  const filter = compression & 0x04 ? (yield* read(1)).readUInt8(0) : 0;
  let rowBytes = width * pixelBytes;
  if (filter === 1) {
    const colours = (yield* read(1)).readUInt8(0) + 1;
    yield { keep: colours * pixelBytes };
    rowBytes = colours <= 2 ? Math.ceil(width / 8) : width;
  } else if (filter !== 0 && filter !== 2) {
    throw new Unframeable(`tight filter ${filter}`);
  }
  const size = rowBytes * height;
  // below 12 bytes the data is sent as it is, without zlib and without a length
  if (size === 0) return;
  if (size < 12) yield { keep: size };
  else yield* compactLengthData();
}

/** Tight's compact length (7 bits a byte, up to 3 bytes) and the data it measures. */
function* compactLengthData(): Generator<Need, void, Buffer> {
  let length = 0;
  for (let i = 0; i < 3; i++) {
    const byte = (yield* read(1)).readUInt8(0);
    length |= (i < 2 ? byte & 0x7f : byte) << (7 * i);
    if (i === 2 || (byte & 0x80) === 0) break;
  }
  yield { keep: length };
}

export type ServerFilterStep = { forward: Buffer } | { dropped: number };
export type ServerFilterResult = { steps: ServerFilterStep[] } | { violation: string };

/**
 * Consumes the server's bytes chunk by chunk; each result lists, in stream order, runs of bytes to
 * forward and the types of messages withheld. Only a header cut by a chunk boundary is held back.
 */
export class ServerMessageFilter {
  #sizes: PixelSizes;
  readonly #walker: Walker;
  #need: Need;
  #held = EMPTY;
  #failed: string | undefined;

  /** `sizes`: from ServerInit's pixel format. */
  constructor(sizes: PixelSizes, onDesktopSize?: DesktopSizeListener) {
    this.#sizes = sizes;
    this.#walker = walkServerMessages(() => this.#sizes, onDesktopSize);
    this.#need = this.#walker.next().value;
  }

  /** The client's SetPixelFormat, for the updates the server sends after it. */
  usePixelSizes(sizes: PixelSizes): void {
    this.#sizes = sizes;
  }

  push(chunk: Buffer): ServerFilterResult {
    if (this.#failed) return { violation: this.#failed };
    const data = this.#held.length > 0 ? Buffer.concat([this.#held, chunk]) : chunk;
    const steps: ServerFilterStep[] = [];
    let offset = 0;
    let runStart = 0;
    const endRun = () => {
      if (offset > runStart) steps.push({ forward: data.subarray(runStart, offset) });
    };
    try {
      for (;;) {
        const need = this.#need;
        if ("peek" in need) {
          if (data.length - offset < need.peek) break;
          this.#need = this.#walker.next(data.subarray(offset, offset + need.peek)).value;
          continue;
        }
        const wanted = "keep" in need ? need.keep : need.drop;
        const taken = Math.min(wanted, data.length - offset);
        if (wanted > 0 && taken === 0) break;
        if ("drop" in need) {
          endRun();
          offset += taken;
          runStart = offset;
        } else {
          offset += taken;
        }
        if (taken < wanted) {
          this.#need = "keep" in need ? { keep: wanted - taken } : { drop: wanted - taken };
          break;
        }
        if ("drop" in need) steps.push({ dropped: ServerMessageType.ServerCutText });
        this.#need = this.#walker.next(EMPTY).value;
      }
    } catch (error) {
      if (!(error instanceof Unframeable)) throw error;
      this.#failed = `the screen sent what a view session cannot frame: ${error.message}`;
      return { violation: this.#failed };
    }
    endRun();
    // Copy the unfinished header so that it does not pin the (possibly large) chunk it came in.
    this.#held = Buffer.from(data.subarray(offset));
    return { steps };
  }
}
