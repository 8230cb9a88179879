/**
 * A viewer that asks what noVNC asks (@novnc/novnc 1.x in Chrome, view only: its pixel format, its
 * SetEncodings list with quality 6 and compression 2) and paces itself as noVNC does against x11vnc
 * (no continuous updates there): one incremental whole-screen FramebufferUpdateRequest after each
 * update received. It frames what arrives without decoding it, so it is faster than a browser; a
 * frame is a FramebufferUpdate carrying at least one rectangle of pixels.
 *
 * The proxy's view filter (proxy/src/rfb/server-messages.ts) sizes the same rectangles but does not
 * say where an update ends, which a viewer must know before asking for the next one.
 */
import type { Duplex } from "node:stream";
import { ByteReader, Encoding, versionMessage } from "@cubicle/proxy/testing";
import type { RfbPath } from "../proxy/paths.ts";

// The proxy's table, with the two encodings noVNC asks for that the proxy cuts out of a view
// session's SetEncodings (it cannot frame them).
const E = { ...Encoding, JPEG: 21, H264: 50 } as const;

// noVNC's `_sendEncodings()` in Chrome (WebCodecs H.264 present) at a 24-bit depth; the proxy cuts
// out what it cannot frame, x11vnc ignores what it does not know.
const NOVNC_ENCODINGS = [
  E.CopyRect,
  E.H264,
  E.Tight,
  E.TightPNG,
  E.ZRLE,
  E.JPEG,
  E.Hextile,
  E.RRE,
  E.Zlib,
  E.Raw,
  -32 + 6, // quality level 6
  -256 + 2, // compression level 2
  E.DesktopSize,
  E.LastRect,
  -258, // QEMU extended key event
  -261, // QEMU LED state
  E.ExtendedDesktopSize,
  -309, // Xvp
  -312, // Fence
  -313, // ContinuousUpdates
  E.DesktopName,
  0xc0a1e5ce | 0, // extended clipboard
  -316, // extended mouse buttons
  0x574d5664, // VMware cursor
  E.Cursor,
];

// noVNC's SetPixelFormat: 32 bits, depth 24, little-endian true colour, 8 bits a channel.
const PIXEL_FORMAT = Buffer.from([32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0]);
const BYTES_PER_PIXEL = 4;
// Tight sends such pixels in 3 bytes.
const TIGHT_PIXEL_BYTES = 3;

export interface Counts {
  /** FramebufferUpdates with pixels in them. */
  frames: number;
  /** Pixels those updates covered, in screens (a partial update counts for the part it covers). */
  screens: number;
  bytes: number;
}

export class Viewer {
  readonly width: number;
  readonly height: number;
  readonly counts: Counts = { frames: 0, screens: 0, bytes: 0 };
  readonly #stream: Duplex;
  readonly #reader: ByteReader;
  #frameWaiters: (() => void)[] = [];
  #closed = false;
  /** Why following updates stopped before the viewer was closed. */
  failure: Error | undefined;

  private constructor(stream: Duplex, reader: ByteReader, width: number, height: number) {
    this.#stream = stream;
    this.#reader = reader;
    this.width = width;
    this.height = height;
  }

  /** Opens `path`, runs the handshake (security None) and sends noVNC's first messages. */
  static async open(path: RfbPath): Promise<Viewer> {
    const stream = await path.open();
    const reader = new ByteReader(stream, 4 * 1024 * 1024);
    const offered = (await reader.read(12)).toString("latin1");
    if (!/^RFB 003\.00[78]\n$/.test(offered)) throw new Error(`unexpected server version ${offered}`);
    stream.write(versionMessage(8));
    const types = [...(await reader.read(await reader.readU8()))];
    if (!types.includes(1)) throw new Error(`no security None on offer: [${types}]`);
    stream.write(Buffer.from([1]));
    if ((await reader.readU32()) !== 0) throw new Error("security None refused");
    stream.write(Buffer.from([1])); // shared
    const init = await reader.read(24);
    await reader.read(init.readUInt32BE(20));
    const viewer = new Viewer(stream, reader, init.readUInt16BE(0), init.readUInt16BE(2));
    viewer.#send(Buffer.concat([Buffer.from([0, 0, 0, 0]), PIXEL_FORMAT]));
    const encodings = Buffer.alloc(4 + 4 * NOVNC_ENCODINGS.length);
    encodings.writeUInt8(2, 0);
    encodings.writeUInt16BE(NOVNC_ENCODINGS.length, 2);
    NOVNC_ENCODINGS.forEach((encoding, i) => {
      encodings.writeInt32BE(encoding, 4 + 4 * i);
    });
    viewer.#send(encodings);
    return viewer;
  }

  /**
   * Asks for the whole screen, then follows with an incremental request after each update, until
   * closed. Resolves once the first update has arrived, with the milliseconds it took.
   */
  async follow(): Promise<number> {
    const started = performance.now();
    this.#request(false);
    const first = this.nextFrame().then(() => performance.now() - started);
    const ended = this.#loop().then(() => {
      throw this.failure ?? new Error("closed before a frame");
    });
    return Promise.race([first, ended]);
  }

  /** Resolves when the next frame has been read whole. */
  nextFrame(): Promise<void> {
    return new Promise((resolve) => this.#frameWaiters.push(resolve));
  }

  close(): void {
    this.#closed = true;
    this.#reader.cancel("closed by the bench");
    this.#stream.destroy();
  }

  async #loop(): Promise<void> {
    try {
      for (;;) {
        const pixels = await this.#readMessage();
        if (pixels === undefined) continue;
        this.#request(true);
        if (!pixels) continue;
        this.counts.frames++;
        const waiters = this.#frameWaiters;
        this.#frameWaiters = [];
        for (const resolve of waiters) resolve();
      }
    } catch (error) {
      if (!this.#closed) this.failure = error instanceof Error ? error : new Error(String(error));
    }
  }

  #request(incremental: boolean): void {
    const message = Buffer.alloc(10);
    message.writeUInt8(3, 0);
    message.writeUInt8(incremental ? 1 : 0, 1);
    message.writeUInt16BE(this.width, 6);
    message.writeUInt16BE(this.height, 8);
    this.#send(message);
  }

  #send(message: Buffer): void {
    if (!this.#closed) this.#stream.write(message);
  }

  async #read(bytes: number): Promise<Buffer> {
    this.counts.bytes += bytes;
    return this.#reader.read(bytes);
  }

  /** Reads one server message: whether an update carried pixels, undefined for other messages. */
  async #readMessage(): Promise<boolean | undefined> {
    const type = (await this.#read(1)).readUInt8(0);
    switch (type) {
      case 0:
        return this.#readUpdate();
      case 2: // Bell
        return undefined;
      case 3: // ServerCutText (x11vnc -nosel sends none; framed in case)
        await this.#read(Math.abs((await this.#read(7)).readInt32BE(3)));
        return undefined;
      default:
        // noVNC would switch to continuous updates on EndOfContinuousUpdates (150): x11vnc sends none.
        throw new Error(`server message type ${type} is not followed by this viewer`);
    }
  }

  async #readUpdate(): Promise<boolean> {
    const count = (await this.#read(3)).readUInt16BE(1);
    let pixels = false;
    for (let i = 0; i < count; i++) {
      const header = await this.#read(12);
      const width = header.readUInt16BE(4);
      const height = header.readUInt16BE(6);
      const encoding = header.readInt32BE(8);
      if (encoding === E.LastRect) break;
      if (encoding >= 0 || encoding === E.TightPNG) {
        pixels = true;
        this.counts.screens += (width * height) / (this.width * this.height);
      }
      await this.#skipRectangle(encoding, width, height);
    }
    return pixels;
  }

  async #skipRectangle(encoding: number, width: number, height: number): Promise<void> {
    switch (encoding) {
      case E.Raw:
        await this.#read(width * height * BYTES_PER_PIXEL);
        return;
      case E.CopyRect:
        await this.#read(4);
        return;
      case E.Tight:
      case E.TightPNG:
        await this.#skipTight(width, height, encoding === E.TightPNG);
        return;
      case E.Zlib:
      case E.ZRLE:
      case E.DesktopName:
        await this.#read((await this.#read(4)).readUInt32BE(0));
        return;
      case E.DesktopSize:
        return;
      case E.ExtendedDesktopSize:
        await this.#read(16 * (await this.#read(4)).readUInt8(0));
        return;
      case E.Cursor:
        await this.#read(width * height * BYTES_PER_PIXEL + Math.ceil(width / 8) * height);
        return;
      default:
        // x11vnc picks Tight from noVNC's list; other encodings are not expected from it.
        throw new Error(`rectangle encoding ${encoding} is not followed by this viewer`);
    }
  }

  async #skipTight(width: number, height: number, png: boolean): Promise<void> {
    const control = (await this.#read(1)).readUInt8(0) >> 4;
    if (control === 0x08) {
      await this.#read(TIGHT_PIXEL_BYTES); // fill
      return;
    }
    if (control === 0x09 || (png && control === 0x0a)) {
      await this.#skipCompact(); // JPEG or PNG
      return;
    }
    if (control & 0x08) throw new Error(`tight compression ${control}`);
    const filter = control & 0x04 ? (await this.#read(1)).readUInt8(0) : 0;
    let rowBytes = width * TIGHT_PIXEL_BYTES;
    if (filter === 1) {
      const colours = (await this.#read(1)).readUInt8(0) + 1;
      await this.#read(colours * TIGHT_PIXEL_BYTES);
      rowBytes = colours <= 2 ? Math.ceil(width / 8) : width;
    } else if (filter !== 0 && filter !== 2) {
      throw new Error(`tight filter ${filter}`);
    }
    const size = rowBytes * height;
    // Below 12 bytes the data comes as it is, without zlib and without a length.
    if (size > 0 && size < 12) await this.#read(size);
    else if (size >= 12) await this.#skipCompact();
  }

  /** Tight's compact length (7 bits a byte, up to 3 bytes) and the data it measures. */
  async #skipCompact(): Promise<void> {
    let length = 0;
    for (let i = 0; i < 3; i++) {
      const byte = (await this.#read(1)).readUInt8(0);
      length |= (i < 2 ? byte & 0x7f : byte) << (7 * i);
      if (i === 2 || (byte & 0x80) === 0) break;
    }
    await this.#read(length);
  }
}
