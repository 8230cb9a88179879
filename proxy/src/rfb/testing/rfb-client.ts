/**
 * A minimal scripted RFB client, the browser's part in tests and benchmarks: security None only, Raw
 * pixels and the DesktopSize pseudo-encoding, plus the input messages a viewer sends.
 */
import type { Duplex } from "node:stream";
import { ByteReader } from "../byte-reader.ts";
import { type RfbMinorVersion, versionMessage } from "../handshake.ts";
import {
  ClientMessageType,
  Encoding,
  type PixelFormat,
  readPixelFormat,
  ServerMessageType,
} from "../protocol.ts";

export { Encoding, type PixelFormat };

export interface ServerInit {
  width: number;
  height: number;
  pixelFormat: PixelFormat;
  name: string;
}

export interface Rectangle {
  x: number;
  y: number;
  width: number;
  height: number;
  encoding: number;
  /** Raw pixel data, `width * height * bitsPerPixel / 8` bytes, unless the client discards pixels. */
  pixels?: Buffer;
}

export type ServerMessage =
  | { type: "framebuffer-update"; rectangles: Rectangle[] }
  | { type: "colour-map"; firstColour: number; colours: number }
  | { type: "bell" }
  | { type: "cut-text"; text: string };

export interface RfbClientOptions {
  /** The RFB version to ask for; default 3.8. */
  version?: RfbMinorVersion;
  shared?: boolean;
  /** Reads Raw pixels past without keeping them (a benchmark's client, which only counts bytes). */
  discardPixels?: boolean;
}

export class RfbClient {
  readonly serverInit: ServerInit;
  width: number;
  height: number;
  #bytesPerPixel: number;
  readonly #discardPixels: boolean;
  readonly #stream: Duplex;
  readonly #reader: ByteReader;

  private constructor(stream: Duplex, reader: ByteReader, serverInit: ServerInit, discardPixels: boolean) {
    this.#discardPixels = discardPixels;
    this.#stream = stream;
    this.#reader = reader;
    this.serverInit = serverInit;
    this.width = serverInit.width;
    this.height = serverInit.height;
    this.#bytesPerPixel = serverInit.pixelFormat.bitsPerPixel / 8;
  }

  /** Runs the handshake up to ServerInit. */
  static async connect(stream: Duplex, options: RfbClientOptions = {}): Promise<RfbClient> {
    const minor = options.version ?? 8;
    const reader = new ByteReader(stream, 16 * 1024 * 1024);
    const offered = (await reader.read(12)).toString("latin1");
    if (!/^RFB 003\.00[378]\n$/.test(offered)) {
      throw new Error(`unexpected server version ${JSON.stringify(offered)}`);
    }
    stream.write(versionMessage(minor));

    if (minor === 3) {
      const type = await reader.readU32();
      if (type === 0) throw new Error(`server refused: ${await readText(reader)}`);
      if (type !== 1) throw new Error(`server chose security type ${type}`);
    } else {
      const count = await reader.readU8();
      if (count === 0) throw new Error(`server refused: ${await readText(reader)}`);
      const types = [...(await reader.read(count))];
      if (!types.includes(1)) throw new Error(`server offers no security None: [${types.join(", ")}]`);
      stream.write(Buffer.from([1]));
      if (minor === 8) {
        const status = await reader.readU32();
        if (status !== 0) throw new Error(`security failed: ${await readText(reader)}`);
      }
    }

    stream.write(Buffer.from([options.shared === false ? 0 : 1]));
    const fixed = await reader.read(24);
    const serverInit: ServerInit = {
      width: fixed.readUInt16BE(0),
      height: fixed.readUInt16BE(2),
      pixelFormat: readPixelFormat(fixed.subarray(4, 20)),
      name: (await reader.read(fixed.readUInt32BE(20))).toString("utf8"),
    };
    return new RfbClient(stream, reader, serverInit, options.discardPixels ?? false);
  }

  send(bytes: Uint8Array): void {
    this.#stream.write(bytes);
  }

  setEncodings(encodings: readonly number[]): void {
    const message = Buffer.alloc(4 + 4 * encodings.length);
    message.writeUInt8(ClientMessageType.SetEncodings, 0);
    message.writeUInt16BE(encodings.length, 2);
    encodings.forEach((encoding, i) => {
      message.writeInt32BE(encoding, 4 + 4 * i);
    });
    this.send(message);
  }

  requestUpdate(
    area: { incremental?: boolean; x?: number; y?: number; width?: number; height?: number } = {},
  ): void {
    const message = Buffer.alloc(10);
    message.writeUInt8(ClientMessageType.FramebufferUpdateRequest, 0);
    message.writeUInt8(area.incremental ? 1 : 0, 1);
    message.writeUInt16BE(area.x ?? 0, 2);
    message.writeUInt16BE(area.y ?? 0, 4);
    message.writeUInt16BE(area.width ?? this.width, 6);
    message.writeUInt16BE(area.height ?? this.height, 8);
    this.send(message);
  }

  pointerEvent(x: number, y: number, buttonMask = 0): void {
    const message = Buffer.alloc(6);
    message.writeUInt8(ClientMessageType.PointerEvent, 0);
    message.writeUInt8(buttonMask, 1);
    message.writeUInt16BE(x, 2);
    message.writeUInt16BE(y, 4);
    this.send(message);
  }

  keyEvent(keysym: number, down: boolean): void {
    const message = Buffer.alloc(8);
    message.writeUInt8(ClientMessageType.KeyEvent, 0);
    message.writeUInt8(down ? 1 : 0, 1);
    message.writeUInt32BE(keysym, 4);
    this.send(message);
  }

  cutText(text: string): void {
    const bytes = Buffer.from(text, "latin1");
    const header = Buffer.alloc(8);
    header.writeUInt8(ClientMessageType.ClientCutText, 0);
    header.writeUInt32BE(bytes.length, 4);
    this.send(Buffer.concat([header, bytes]));
  }

  async readMessage(): Promise<ServerMessage> {
    const type = await this.#reader.readU8();
    switch (type) {
      case ServerMessageType.FramebufferUpdate:
        return { type: "framebuffer-update", rectangles: await this.#readRectangles() };
      case ServerMessageType.SetColourMapEntries: {
        const header = await this.#reader.read(5);
        const colours = header.readUInt16BE(3);
        await this.#reader.read(6 * colours);
        return { type: "colour-map", firstColour: header.readUInt16BE(1), colours };
      }
      case ServerMessageType.Bell:
        return { type: "bell" };
      case ServerMessageType.ServerCutText: {
        // the extended-clipboard form has a negative length whose magnitude is the payload's
        const length = (await this.#reader.read(7)).readInt32BE(3);
        return { type: "cut-text", text: (await this.#reader.read(Math.abs(length))).toString("latin1") };
      }
      default:
        throw new Error(`unexpected server message type ${type}`);
    }
  }

  /** The next FramebufferUpdate, skipping other messages. */
  async readUpdate(): Promise<Rectangle[]> {
    for (;;) {
      const message = await this.readMessage();
      if (message.type === "framebuffer-update") return message.rectangles;
    }
  }

  close(): void {
    this.#stream.end();
  }

  async #readRectangles(): Promise<Rectangle[]> {
    const count = (await this.#reader.read(3)).readUInt16BE(1);
    const rectangles: Rectangle[] = [];
    for (let i = 0; i < count; i++) {
      const header = await this.#reader.read(12);
      const rectangle: Rectangle = {
        x: header.readUInt16BE(0),
        y: header.readUInt16BE(2),
        width: header.readUInt16BE(4),
        height: header.readUInt16BE(6),
        encoding: header.readInt32BE(8),
      };
      if (rectangle.encoding === Encoding.Raw) {
        const size = rectangle.width * rectangle.height * this.#bytesPerPixel;
        if (this.#discardPixels) await this.#reader.skip(size);
        else rectangle.pixels = await this.#reader.read(size);
      } else if (rectangle.encoding === Encoding.CopyRect) {
        await this.#reader.read(4);
      } else if (rectangle.encoding === Encoding.DesktopSize) {
        this.width = rectangle.width;
        this.height = rectangle.height;
      } else {
        throw new Error(`unexpected encoding ${rectangle.encoding}`);
      }
      rectangles.push(rectangle);
    }
    return rectangles;
  }
}

async function readText(reader: ByteReader): Promise<string> {
  return (await reader.read(await reader.readU32())).toString("latin1");
}
