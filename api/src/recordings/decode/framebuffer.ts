import jpeg from "jpeg-js";
import { PNG } from "pngjs";
import { RecordingDecodeError } from "./errors.ts";

/** Which byte of a decoder's pixel holds red, green and blue. */
export type Channels = readonly [number, number, number];
export const RGB: Channels = [0, 1, 2];

/** The part of noVNC's Display (core/display.js) that its decoders draw with. */
export interface Display {
  fillRect(x: number, y: number, width: number, height: number, colour: ArrayLike<number>): void;
  copyImage(fromX: number, fromY: number, x: number, y: number, width: number, height: number): void;
  blitImage(x: number, y: number, width: number, height: number, data: Uint8Array, offset: number): void;
  imageRect(x: number, y: number, width: number, height: number, mime: string, data: Uint8Array): void;
}

/**
 * The screen as RGBA bytes, drawn on by noVNC's decoders in place of noVNC's Display, which draws
 * on a browser canvas. Like the canvas it clips every drawing to the screen and keeps the top-left
 * of the picture when the screen is resized; JPEG and PNG rectangles, which the browser decodes
 * with an Image, are decoded here at once with jpeg-js and pngjs.
 */
export class Framebuffer implements Display {
  width: number;
  height: number;
  pixels: Uint8Array;
  /** For the rectangle being drawn: where the decoder's bytes put each colour (see pixel-format.ts). */
  channels: Channels = RGB;

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.pixels = blank(width, height);
  }

  resize(width: number, height: number): void {
    if (width === this.width && height === this.height) return;
    const pixels = blank(width, height);
    const rowBytes = Math.min(width, this.width) * 4;
    for (let y = 0; y < Math.min(height, this.height); y++) {
      pixels.set(this.pixels.subarray(y * this.width * 4, y * this.width * 4 + rowBytes), y * width * 4);
    }
    this.width = width;
    this.height = height;
    this.pixels = pixels;
  }

  fillRect(x: number, y: number, width: number, height: number, colour: ArrayLike<number>): void {
    const [r, g, b] = this.channels.map((channel) => colour[channel] as number) as [number, number, number];
    const area = this.#clip(x, y, width, height);
    for (let row = area.y; row < area.y + area.height; row++) {
      for (let at = (row * this.width + area.x) * 4, end = at + area.width * 4; at < end; at += 4) {
        this.pixels[at] = r;
        this.pixels[at + 1] = g;
        this.pixels[at + 2] = b;
        this.pixels[at + 3] = 255;
      }
    }
  }

  copyImage(fromX: number, fromY: number, x: number, y: number, width: number, height: number): void {
    // the source is read whole before drawing, as a canvas copying onto itself does
    const source = new Uint8Array(width * height * 4);
    const from = this.#clip(fromX, fromY, width, height);
    for (let row = 0; row < from.height; row++) {
      const at = ((from.y + row) * this.width + from.x) * 4;
      source.set(
        this.pixels.subarray(at, at + from.width * 4),
        ((from.y - fromY + row) * width + from.x - fromX) * 4,
      );
    }
    this.#draw(x, y, width, height, source, 0, RGB);
  }

  blitImage(x: number, y: number, width: number, height: number, data: Uint8Array, offset: number): void {
    this.#draw(x, y, width, height, data, offset, this.channels);
  }

  imageRect(x: number, y: number, width: number, height: number, mime: string, data: Uint8Array): void {
    if (width === 0 || height === 0) return;
    const image =
      mime === "image/jpeg"
        ? jpeg.decode(data, { useTArray: true, formatAsRGBA: true })
        : PNG.sync.read(Buffer.from(data.buffer, data.byteOffset, data.length));
    // noVNC draws nothing from an image of another size (and stops drawing altogether)
    if (image.width !== width || image.height !== height) {
      throw new RecordingDecodeError(
        `a ${mime} rectangle of ${width}×${height} holds an image of ${image.width}×${image.height}`,
      );
    }
    this.#draw(x, y, width, height, image.data, 0, RGB);
  }

  /** The screen as a PNG file. */
  png(): Buffer {
    const png = new PNG({ width: this.width, height: this.height, colorType: 2, inputColorType: 6 });
    png.data = Buffer.from(this.pixels.buffer, this.pixels.byteOffset, this.pixels.length);
    return PNG.sync.write(png, { colorType: 2, inputColorType: 6 });
  }

  #draw(
    x: number,
    y: number,
    width: number,
    height: number,
    data: Uint8Array,
    offset: number,
    [r, g, b]: Channels,
  ): void {
    const area = this.#clip(x, y, width, height);
    for (let row = 0; row < area.height; row++) {
      let from = offset + ((area.y - y + row) * width + area.x - x) * 4;
      let to = ((area.y + row) * this.width + area.x) * 4;
      if (r === 0 && g === 1 && b === 2) {
        this.pixels.set(data.subarray(from, from + area.width * 4), to);
        // the screen is opaque, whatever a decoder left in the fourth byte
        for (let i = 3; i < area.width * 4; i += 4) this.pixels[to + i] = 255;
        continue;
      }
      for (let i = 0; i < area.width; i++, from += 4, to += 4) {
        this.pixels[to] = data[from + r] as number;
        this.pixels[to + 1] = data[from + g] as number;
        this.pixels[to + 2] = data[from + b] as number;
        this.pixels[to + 3] = 255;
      }
    }
  }

  #clip(x: number, y: number, width: number, height: number) {
    const left = Math.max(0, x);
    const top = Math.max(0, y);
    const right = Math.min(this.width, x + width);
    const bottom = Math.min(this.height, y + height);
    return { x: left, y: top, width: Math.max(0, right - left), height: Math.max(0, bottom - top) };
  }
}

/** Opaque black, as a screen is before anything is drawn on it. */
function blank(width: number, height: number): Uint8Array {
  const pixels = new Uint8Array(width * height * 4);
  for (let at = 3; at < pixels.length; at += 4) pixels[at] = 255;
  return pixels;
}
