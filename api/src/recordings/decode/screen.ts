import { type RecordingRecord, RecordKind } from "@cubicle/proxy/recording";
import {
  ClientMessageType,
  Encoding,
  type PixelFormat,
  readPixelFormat,
  ServerMessageType,
} from "@cubicle/proxy/rfb";
import { RecordingDecodeError } from "./errors.ts";
import { type Display, Framebuffer, RGB } from "./framebuffer.ts";
import { createDecoders, type NoVncDecoder } from "./novnc.ts";
import { type DecoderView, decoderView } from "./pixel-format.ts";
import { ReceiveQueue } from "./receive-queue.ts";

/** Where each encoding's pixels keep their colours (Tight's and JPEG's are always red, green, blue). */
const channelsOf = (encoding: number, view: DecoderView) =>
  encoding === Encoding.Tight || encoding === Encoding.TightPNG || encoding === Encoding.JPEG
    ? RGB
    : encoding === Encoding.ZRLE
      ? view.compactPixel
      : view.pixel;

/** noVNC's 8-bit format is only read by these (as noVNC, which asks for no other encoding then). */
const LOW_COLOUR_ENCODINGS: ReadonlySet<number> = new Set([Encoding.Raw, Encoding.CopyRect]);

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
  encoding: number;
  /** CursorWithAlpha: the encoding of its image, once read. */
  imageEncoding?: number;
}

/** Draws on nothing: for a cursor image, which is framed by a decoder but not part of the screen. */
const NO_DISPLAY: Display = {
  fillRect() {},
  copyImage() {},
  blitImage() {},
  imageRect() {},
};

/**
 * The screen of a recording: fed the SERVER bytes (from ServerInit on) and the CLIENT messages in
 * order, it frames the server's messages as noVNC's RFB does (core/rfb.js, _normalMsg and
 * _framebufferUpdate) and has noVNC's decoders draw each rectangle on `framebuffer`. Bytes of a
 * message not yet whole wait for the next push, as in noVNC; a decoder resumes where it stopped.
 */
export class ScreenDecoder {
  readonly #queue = new ReceiveQueue();
  readonly #decoders = createDecoders();
  #framebuffer: Framebuffer | undefined;
  #format: PixelFormat | undefined;
  /** SetPixelFormat sent by the client: the server uses it from its next update on. */
  #nextFormat: PixelFormat | undefined;
  #view: DecoderView | undefined;
  #rectsLeft = 0;
  #rect: Rect | undefined;

  /** Undefined until ServerInit was read. */
  get framebuffer(): Framebuffer | undefined {
    return this.#framebuffer;
  }

  /** The next record of the recording. Of the client's messages only SetPixelFormat matters here. */
  push(record: RecordingRecord): void {
    if (record.kind === RecordKind.SERVER) {
      this.#queue.push(record.bytes);
      while (this.#step());
    } else if (
      record.kind === RecordKind.CLIENT &&
      record.bytes[0] === ClientMessageType.SetPixelFormat &&
      record.bytes.length >= 20
    ) {
      this.#nextFormat = readPixelFormat(record.bytes.subarray(4, 20));
    }
  }

  /** Reads one message (or a rectangle); false when the queue holds too few bytes for it. */
  #step(): boolean {
    if (!this.#framebuffer) return this.#serverInit();
    if (this.#rectsLeft > 0) return this.#rectangle();
    const queue = this.#queue;
    if (queue.rQlen() < 1) return false;
    const type = queue.rQpeek8();
    switch (type) {
      case ServerMessageType.FramebufferUpdate: {
        if (queue.rQlen() < 4) return false;
        this.#rectsLeft = queue.peekView(4).getUint16(2);
        queue.rQskipBytes(4);
        if (this.#nextFormat) this.#useFormat(this.#nextFormat);
        this.#nextFormat = undefined;
        return true;
      }
      case ServerMessageType.SetColourMapEntries:
        return this.#skip(6, (header) => 6 * header.getUint16(4));
      case ServerMessageType.Bell:
      case ServerMessageType.EndOfContinuousUpdates:
        return this.#skip(1);
      case ServerMessageType.ServerCutText:
        // the extended clipboard's form has a negative length, whose magnitude is the payload's
        return this.#skip(8, (header) => Math.abs(header.getInt32(4)));
      case ServerMessageType.ServerFence:
        return this.#skip(9, (header) => header.getUint8(8));
      case ServerMessageType.Xvp:
        return this.#skip(4);
      default:
        throw new RecordingDecodeError(`the screen sent a message of unknown type ${type}`);
    }
  }

  #serverInit(): boolean {
    const queue = this.#queue;
    if (queue.rQlen() < 24) return false;
    const header = queue.peekView(24);
    if (queue.rQlen() < 24 + header.getUint32(20)) return false;
    this.#framebuffer = new Framebuffer(header.getUint16(0), header.getUint16(2));
    this.#useFormat(readPixelFormat(queue.rQpeekBytes(20, false).subarray(4)));
    queue.rQskipBytes(24 + header.getUint32(20));
    return true;
  }

  #useFormat(format: PixelFormat): void {
    this.#format = format;
    this.#view = undefined;
  }

  /** Worked out at the first rectangle of pixels: a format noVNC cannot read is only an error if pixels come in it. */
  #decoderView(): DecoderView {
    this.#view ??= decoderView(this.#format as PixelFormat);
    return this.#view;
  }

  /** Skips a message or rectangle whose size its first `header` bytes tell. */
  #skip(header: number, bodyBytes: (header: DataView) => number = () => 0): boolean {
    const queue = this.#queue;
    if (queue.rQlen() < header) return false;
    const total = header + bodyBytes(queue.peekView(header));
    if (queue.rQlen() < total) return false;
    queue.rQskipBytes(total);
    return true;
  }

  #rectangle(): boolean {
    const queue = this.#queue;
    if (!this.#rect) {
      if (queue.rQlen() < 12) return false;
      const header = queue.peekView(12);
      this.#rect = {
        x: header.getUint16(0),
        y: header.getUint16(2),
        width: header.getUint16(4),
        height: header.getUint16(6),
        encoding: header.getInt32(8),
      };
      queue.rQskipBytes(12);
    }
    if (!this.#rectBody(this.#rect)) return false;
    this.#rect = undefined;
    this.#rectsLeft--;
    return true;
  }

  #rectBody(rect: Rect): boolean {
    const framebuffer = this.#framebuffer as Framebuffer;
    const { width, height } = rect;
    switch (rect.encoding) {
      case Encoding.LastRect:
        this.#rectsLeft = 1;
        return true;
      case Encoding.DesktopSize:
        framebuffer.resize(width, height);
        return true;
      case Encoding.ExtendedDesktopSize: {
        if (!this.#skip(4, (header) => 16 * header.getUint8(0))) return false;
        // x 1 with a non-zero y: the server refused this client's resize, and nothing changed
        if (!(rect.x === 1 && rect.y !== 0)) framebuffer.resize(width, height);
        return true;
      }
      case Encoding.PointerPos:
      case Encoding.QEMUExtendedKeyEvent:
      case Encoding.ExtendedMouseButtons:
        return true;
      case Encoding.QEMULedEvent:
        return this.#skip(1);
      case Encoding.DesktopName:
        return this.#skip(4, (header) => header.getUint32(0));
      case Encoding.Cursor:
        return this.#skip(width * height * this.#bytesPerPixel() + Math.ceil(width / 8) * height);
      case Encoding.XCursor:
        return width * height === 0 || this.#skip(6 + 2 * Math.ceil(width / 8) * height);
      case Encoding.VMwareCursor:
        return this.#skip(2, (header) => {
          const type = header.getUint8(0);
          if (type === 0) return 2 * width * height * this.#bytesPerPixel();
          if (type === 1) return 4 * width * height;
          throw new RecordingDecodeError(`VMware cursor of unknown type ${type}`);
        });
      case Encoding.CursorWithAlpha:
        return this.#cursorWithAlpha(rect);
      default:
        return this.#pixels(rect);
    }
  }

  #bytesPerPixel(): number {
    return Math.ceil((this.#format as PixelFormat).bitsPerPixel / 8);
  }

  /** An RGBA image in any encoding after a 4-byte encoding number: decoded by that decoder onto nothing. */
  #cursorWithAlpha(rect: Rect): boolean {
    if (rect.imageEncoding === undefined) {
      if (this.#queue.rQlen() < 4) return false;
      rect.imageEncoding = this.#queue.peekView(4).getInt32(0);
      this.#queue.rQskipBytes(4);
    }
    return this.#decode(this.#decoder(rect.imageEncoding), rect, NO_DISPLAY, 24);
  }

  #pixels(rect: Rect): boolean {
    const view = this.#decoderView();
    const decoder = this.#decoder(rect.encoding);
    if (view.depth === 8 && !LOW_COLOUR_ENCODINGS.has(rect.encoding)) {
      throw new RecordingDecodeError(
        `encoding ${rect.encoding} in noVNC's 8-bit pixel format cannot be decoded`,
      );
    }
    const framebuffer = this.#framebuffer as Framebuffer;
    framebuffer.channels = channelsOf(rect.encoding, view);
    return this.#decode(decoder, rect, framebuffer, view.depth);
  }

  #decoder(encoding: number): NoVncDecoder {
    const decoder = this.#decoders.get(encoding);
    if (!decoder) throw new RecordingDecodeError(`rectangles of encoding ${encoding} cannot be decoded`);
    return decoder;
  }

  #decode(decoder: NoVncDecoder, rect: Rect, display: Display, depth: number): boolean {
    try {
      return decoder.decodeRect(rect.x, rect.y, rect.width, rect.height, this.#queue, display, depth);
    } catch (error) {
      if (error instanceof RecordingDecodeError) throw error;
      throw new RecordingDecodeError(
        `a rectangle of encoding ${rect.encoding} could not be decoded: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}
