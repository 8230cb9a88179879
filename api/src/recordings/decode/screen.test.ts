import jpeg from "jpeg-js";
import { describe, expect, it } from "vitest";
import { RecordingDecodeError } from "./errors.ts";
import { ScreenDecoder } from "./screen.ts";
import {
  bytes,
  client,
  cpixel,
  framebufferUpdate,
  NOVNC_FORMAT,
  pixel,
  type Rgb,
  raw,
  rect,
  server,
  serverInit,
  setPixelFormat,
  tightBasic,
  tightFill,
  tightJpeg,
  tightMono,
  X11_FORMAT,
  zrle,
} from "./testing/rfb-stream.ts";

const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];
const GREY: Rgb = [90, 100, 110];

/** A screen fed ServerInit and then each update as a SERVER record. */
function decode(width: number, height: number, ...updates: Uint8Array[]) {
  const screen = new ScreenDecoder();
  screen.push(server(0, serverInit(width, height)));
  for (const update of updates) screen.push(server(1, update));
  return screen;
}

function colourAt(screen: ScreenDecoder, x: number, y: number): Rgb {
  const framebuffer = screen.framebuffer;
  if (!framebuffer) throw new Error("no screen");
  const at = (y * framebuffer.width + x) * 4;
  return [...framebuffer.pixels.subarray(at, at + 3)] as unknown as Rgb;
}

describe("the screen decoder", () => {
  it("reads ServerInit's size and starts black", () => {
    const screen = decode(5, 3);
    expect(screen.framebuffer).toMatchObject({ width: 5, height: 3 });
    expect(colourAt(screen, 4, 2)).toEqual([0, 0, 0]);
  });

  it("draws Raw rectangles", () => {
    const screen = decode(4, 4, framebufferUpdate(rect(1, 1, 2, 2, 0, raw(2, 2, RED))));
    expect(colourAt(screen, 1, 1)).toEqual(RED);
    expect(colourAt(screen, 2, 2)).toEqual(RED);
    expect(colourAt(screen, 0, 0)).toEqual([0, 0, 0]);
    expect(colourAt(screen, 3, 3)).toEqual([0, 0, 0]);
  });

  it("copies with CopyRect", () => {
    const screen = decode(
      4,
      4,
      framebufferUpdate(
        rect(0, 0, 2, 2, 0, [...pixel(RED), ...pixel(GREEN), ...pixel(BLUE), ...pixel(GREY)]),
      ),
      framebufferUpdate(rect(2, 2, 2, 2, 1, bytes([0, 0, 0, 0]))),
    );
    expect([
      colourAt(screen, 2, 2),
      colourAt(screen, 3, 2),
      colourAt(screen, 2, 3),
      colourAt(screen, 3, 3),
    ]).toEqual([RED, GREEN, BLUE, GREY]);
  });

  it("draws RRE and Hextile", () => {
    const rre = rect(0, 0, 4, 4, 2, bytes([0, 0, 0, 1], pixel(RED), pixel(BLUE), [0, 1, 0, 1, 0, 2, 0, 2]));
    // one tile: background GREY, foreground GREEN, one subrect at (2,0) of 2×1
    const hextile = rect(
      4,
      0,
      4,
      4,
      5,
      bytes([0x02 | 0x04 | 0x08], pixel(GREY), pixel(GREEN), [1, 0x20, 0x10]),
    );
    const screen = decode(8, 4, framebufferUpdate(rre, hextile));
    expect(colourAt(screen, 0, 0)).toEqual(RED);
    expect(colourAt(screen, 1, 1)).toEqual(BLUE);
    expect(colourAt(screen, 2, 2)).toEqual(BLUE);
    expect(colourAt(screen, 3, 3)).toEqual(RED);
    expect(colourAt(screen, 4, 0)).toEqual(GREY);
    expect(colourAt(screen, 6, 0)).toEqual(GREEN);
    expect(colourAt(screen, 7, 0)).toEqual(GREEN);
    expect(colourAt(screen, 6, 1)).toEqual(GREY);
  });

  it("draws Tight fill, basic (zlib) and palette rectangles", () => {
    const fill = rect(0, 0, 2, 2, 7, tightFill(GREY));
    const basic = rect(2, 0, 2, 2, 7, tightBasic([RED, GREEN, BLUE, GREY]));
    const mono = rect(
      0,
      2,
      4,
      2,
      7,
      tightMono(
        4,
        [RED, BLUE],
        [
          [0, 1, 0, 1],
          [1, 1, 0, 0],
        ],
      ),
    );
    const screen = decode(4, 4, framebufferUpdate(fill, basic, mono));
    expect(colourAt(screen, 1, 1)).toEqual(GREY);
    expect([
      colourAt(screen, 2, 0),
      colourAt(screen, 3, 0),
      colourAt(screen, 2, 1),
      colourAt(screen, 3, 1),
    ]).toEqual([RED, GREEN, BLUE, GREY]);
    expect([0, 1, 2, 3].map((x) => colourAt(screen, x, 2))).toEqual([RED, BLUE, RED, BLUE]);
    expect([0, 1, 2, 3].map((x) => colourAt(screen, x, 3))).toEqual([BLUE, BLUE, RED, RED]);
  });

  it("draws a Tight JPEG rectangle", () => {
    const width = 16;
    const height = 8;
    const data = Buffer.alloc(width * height * 4);
    for (let i = 0; i < width * height; i++) data.set([...(i % width < 8 ? RED : BLUE), 255], i * 4);
    const image = jpeg.encode({ data, width, height }, 95).data;
    const screen = decode(20, 10, framebufferUpdate(rect(2, 1, width, height, 7, tightJpeg(image))));
    const [r, g, b] = colourAt(screen, 3, 2);
    expect(r).toBeGreaterThan(200);
    expect(g + b).toBeLessThan(60);
    const [r2, , b2] = colourAt(screen, 16, 7);
    expect(b2).toBeGreaterThan(200);
    expect(r2).toBeLessThan(40);
    expect(colourAt(screen, 19, 9)).toEqual([0, 0, 0]);
  });

  it("draws ZRLE tiles across the 64-pixel tile width", () => {
    const width = 70;
    const rightTile = Array.from({ length: 6 * 2 }, (_, i) => cpixel(i % 2 === 0 ? GREEN : BLUE));
    const screen = decode(
      width,
      2,
      framebufferUpdate(rect(0, 0, width, 2, 16, zrle([{ solid: cpixel(RED) }, { raw: rightTile }]))),
    );
    expect(colourAt(screen, 0, 0)).toEqual(RED);
    expect(colourAt(screen, 63, 1)).toEqual(RED);
    expect(colourAt(screen, 64, 0)).toEqual(GREEN);
    expect(colourAt(screen, 65, 0)).toEqual(BLUE);
    expect(colourAt(screen, 69, 1)).toEqual(BLUE);
  });

  it("reads pixels in ServerInit's format until the client's SetPixelFormat, then in the client's", () => {
    const screen = new ScreenDecoder();
    screen.push(server(0, serverInit(4, 1, X11_FORMAT)));
    screen.push(
      server(
        1,
        framebufferUpdate(
          rect(0, 0, 1, 1, 0, pixel(RED, X11_FORMAT)),
          rect(1, 0, 1, 1, 16, zrle([{ solid: cpixel(GREY, X11_FORMAT) }])),
          rect(2, 0, 1, 1, 7, tightFill(BLUE)),
        ),
      ),
    );
    screen.push(client(2, setPixelFormat(NOVNC_FORMAT)));
    screen.push(server(3, framebufferUpdate(rect(3, 0, 1, 1, 0, pixel(GREEN)))));
    expect([0, 1, 2, 3].map((x) => colourAt(screen, x, 0))).toEqual([RED, GREY, BLUE, GREEN]);
    // the same bytes as the first rectangle, now read in noVNC's format: red and blue swap
    screen.push(server(4, framebufferUpdate(rect(0, 0, 1, 1, 0, pixel(RED, X11_FORMAT)))));
    expect(colourAt(screen, 0, 0)).toEqual(BLUE);
  });

  it("refuses pixels in a format noVNC's decoders cannot read", () => {
    const screen = new ScreenDecoder();
    screen.push(
      server(
        0,
        serverInit(2, 1, {
          ...NOVNC_FORMAT,
          bitsPerPixel: 16,
          depth: 16,
          redMax: 31,
          greenMax: 63,
          blueMax: 31,
        }),
      ),
    );
    expect(() => screen.push(server(1, framebufferUpdate(rect(0, 0, 1, 1, 0, [0, 0]))))).toThrow(
      RecordingDecodeError,
    );
  });

  it("resizes on DesktopSize and ExtendedDesktopSize, keeping the top-left picture", () => {
    const screen = decode(
      2,
      2,
      framebufferUpdate(rect(0, 0, 2, 2, 0, raw(2, 2, RED))),
      framebufferUpdate(rect(0, 0, 4, 3, -223)),
    );
    expect(screen.framebuffer).toMatchObject({ width: 4, height: 3 });
    expect(colourAt(screen, 1, 1)).toEqual(RED);
    expect(colourAt(screen, 3, 2)).toEqual([0, 0, 0]);
    const screenLayout = bytes([1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0], [0, 5, 0, 1], [0, 0, 0, 0]);
    screen.push(
      server(
        2,
        framebufferUpdate(rect(0, 0, 5, 1, -308, screenLayout), rect(4, 0, 1, 1, 0, raw(1, 1, BLUE))),
      ),
    );
    expect(screen.framebuffer).toMatchObject({ width: 5, height: 1 });
    expect(colourAt(screen, 0, 0)).toEqual(RED);
    expect(colourAt(screen, 4, 0)).toEqual(BLUE);
    // x = 1, y = 3: the server refused a resize this client asked for
    screen.push(server(3, framebufferUpdate(rect(1, 3, 9, 9, -308, screenLayout))));
    expect(screen.framebuffer).toMatchObject({ width: 5, height: 1 });
  });

  it("frames pseudo-encodings and other messages, so a Raw rectangle after them lands right", () => {
    const cursor = rect(0, 0, 9, 2, -239, bytes(raw(9, 2, GREY), [0xff, 0x80, 0xff, 0x80]));
    const name = new TextEncoder().encode("a desktop");
    const desktopName = rect(0, 0, 0, 0, -307, bytes([0, 0, 0, name.length], name));
    const vmwareCursor = rect(0, 0, 2, 1, 0x574d5664, bytes([1, 0], raw(2, 1, GREEN)));
    const alphaCursor = rect(0, 0, 3, 1, -314, bytes([0, 0, 0, 0], raw(3, 1, GREEN)));
    const qemuKeys = rect(0, 0, 0, 0, -258);
    const leds = rect(0, 0, 0, 0, -261, [2]);
    const messages = bytes(
      [2], // Bell
      [3, 0, 0, 0, 0, 0, 0, 3, 0x61, 0x62, 0x63], // ServerCutText
      [3, 0, 0, 0, 0xff, 0xff, 0xff, 0xfc, 1, 0, 0, 0], // ServerCutText, extended (caps)
      [150], // EndOfContinuousUpdates
      [248, 0, 0, 0, 0x80, 0, 0, 0, 2, 7, 7], // ServerFence with 2 bytes
      [250, 0, 1, 1], // Xvp init
      [1, 0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6], // SetColourMapEntries of one colour
    );
    const lastRect = bytes([0, 0, 0xff, 0xff], rect(0, 0, 1, 1, 0, raw(1, 1, BLUE)), rect(0, 0, 0, 0, -224));
    const screen = decode(
      4,
      2,
      framebufferUpdate(
        cursor,
        desktopName,
        vmwareCursor,
        alphaCursor,
        qemuKeys,
        leds,
        rect(1, 1, 1, 1, 0, raw(1, 1, RED)),
      ),
      messages,
      lastRect,
      framebufferUpdate(rect(3, 0, 1, 1, 0, raw(1, 1, GREEN))),
    );
    expect(colourAt(screen, 1, 1)).toEqual(RED);
    expect(colourAt(screen, 0, 0)).toEqual(BLUE);
    expect(colourAt(screen, 3, 0)).toEqual(GREEN);
    expect(colourAt(screen, 2, 1)).toEqual([0, 0, 0]);
  });

  it("decodes the same when the bytes arrive one at a time", () => {
    const stream = bytes(
      serverInit(70, 4),
      framebufferUpdate(
        rect(
          0,
          0,
          70,
          2,
          16,
          zrle([{ solid: cpixel(RED) }, { raw: Array.from({ length: 12 }, () => cpixel(GREEN)) }]),
        ),
        rect(0, 2, 2, 2, 7, tightBasic([RED, GREEN, BLUE, GREY])),
        rect(2, 2, 2, 2, 5, bytes([1], raw(2, 2, BLUE))),
        rect(4, 2, 3, 2, 0, raw(3, 2, GREY)),
      ),
    );
    const whole = new ScreenDecoder();
    whole.push(server(0, stream));
    const piecemeal = new ScreenDecoder();
    for (const byte of stream) piecemeal.push(server(0, Uint8Array.of(byte)));
    expect(colourAt(whole, 65, 1)).toEqual(GREEN);
    expect(colourAt(whole, 5, 3)).toEqual(GREY);
    expect(Buffer.from(piecemeal.framebuffer?.pixels ?? [])).toEqual(
      Buffer.from(whole.framebuffer?.pixels ?? []),
    );
  });

  it("reports a message it does not know", () => {
    expect(() => decode(2, 2, bytes([77]))).toThrow(/unknown type 77/);
  });
});
