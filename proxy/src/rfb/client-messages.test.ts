import { describe, expect, it } from "vitest";
import { ClientMessageFilter, type FilterResult } from "./client-messages.ts";

const bytes = (...parts: (number | number[] | Buffer)[]) =>
  Buffer.concat(parts.map((part) => (Buffer.isBuffer(part) ? part : Buffer.from([part].flat()))));
const u16 = (n: number) => [n >> 8, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
const filler = (n: number, start = 0x41) => Array.from({ length: n }, (_, i) => (start + i) & 0xff);

/** One sample of every client message the proxy frames, and whether a viewer may send it. */
const SAMPLES: { name: string; message: Buffer; view: "forward" | "drop" }[] = [
  {
    name: "SetPixelFormat",
    message: bytes(0, [0, 0, 0], [32, 24, 0, 1], u16(255), u16(255), u16(255), [16, 8, 0], [0, 0, 0]),
    view: "forward",
  },
  { name: "SetEncodings", message: bytes(2, 0, u16(3), u32(0), u32(1), u32(-223 >>> 0)), view: "forward" },
  { name: "SetEncodings (none)", message: bytes(2, 0, u16(0)), view: "forward" },
  {
    name: "FramebufferUpdateRequest",
    message: bytes(3, 1, u16(0), u16(0), u16(1280), u16(800)),
    view: "forward",
  },
  { name: "KeyEvent", message: bytes(4, 1, [0, 0], u32(0xff0d)), view: "drop" },
  { name: "PointerEvent", message: bytes(5, 1, u16(100), u16(200)), view: "drop" },
  { name: "ClientCutText", message: bytes(6, [0, 0, 0], u32(5), Buffer.from("hello")), view: "drop" },
  { name: "ClientCutText (empty)", message: bytes(6, [0, 0, 0], u32(0)), view: "drop" },
  {
    name: "ClientCutText (extended, negative length)",
    message: bytes(6, [0, 0, 0], u32(-8 >>> 0), u32(0x10000001), filler(4)),
    view: "drop",
  },
  {
    name: "EnableContinuousUpdates",
    message: bytes(150, 1, u16(0), u16(0), u16(1280), u16(800)),
    view: "forward",
  },
  { name: "ClientFence", message: bytes(248, [0, 0, 0], u32(0x80000003), 3, filler(3)), view: "forward" },
  { name: "ClientFence (no payload)", message: bytes(248, [0, 0, 0], u32(0), 0), view: "forward" },
  {
    name: "ClientFence (64-byte payload)",
    message: bytes(248, [0, 0, 0], u32(0), 64, filler(64)),
    view: "forward",
  },
  { name: "xvp", message: bytes(250, 0, 1, 2), view: "drop" },
  { name: "SetDesktopSize", message: bytes(251, 0, u16(1024), u16(768), 2, 0, filler(32)), view: "drop" },
  { name: "gii (little endian)", message: bytes(253, 0x01, [2, 0], [1, 0]), view: "drop" },
  { name: "gii (big endian)", message: bytes(253, 0x80, u16(24), filler(24)), view: "drop" },
  { name: "QEMU extended key event", message: bytes(255, 0, u16(1), u32(0x61), u32(0x1e)), view: "drop" },
  { name: "QEMU audio enable", message: bytes(255, 1, u16(0)), view: "drop" },
  { name: "QEMU audio disable", message: bytes(255, 1, u16(1)), view: "drop" },
  { name: "QEMU audio set format", message: bytes(255, 1, u16(2), 3, 2, u32(44100)), view: "drop" },
];

const sample = (name: string): Buffer => {
  const found = SAMPLES.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no sample ${name}`);
  return found.message;
};

interface Outcome {
  forwarded: Buffer[];
  dropped: number[];
  violation?: string;
}

function feed(filter: ClientMessageFilter, chunks: Buffer[]): Outcome {
  const outcome: Outcome = { forwarded: [], dropped: [] };
  for (const chunk of chunks) {
    const result: FilterResult = filter.push(chunk);
    if ("violation" in result) {
      outcome.violation = result.violation.reason;
      return outcome;
    }
    for (const step of result.steps) {
      if ("forward" in step) outcome.forwarded.push(Buffer.from(step.forward));
      else outcome.dropped.push(step.dropped);
    }
  }
  return outcome;
}

const filter = (mode: "view" | "control", maxMessageBytes = 256 * 1024) =>
  new ClientMessageFilter({ mode, maxMessageBytes });

/** Every way of cutting `data` in two. */
const splits = (data: Buffer) =>
  Array.from({ length: data.length - 1 }, (_, i) => [data.subarray(0, i + 1), data.subarray(i + 1)]);

describe("ClientMessageFilter", () => {
  describe.each(SAMPLES)("$name", ({ message, view }) => {
    const type = message[0];

    it("is forwarded whole in control mode", () => {
      expect(feed(filter("control"), [message])).toEqual({ forwarded: [message], dropped: [] });
    });

    it(`is ${view === "forward" ? "forwarded" : "dropped"} in view mode`, () => {
      const expected =
        view === "forward" ? { forwarded: [message], dropped: [] } : { forwarded: [], dropped: [type] };
      expect(feed(filter("view"), [message])).toEqual(expected);
    });

    it("is only passed on once complete, wherever the stream is cut", () => {
      for (const chunks of [...splits(message), [...message].map((byte) => Buffer.from([byte]))]) {
        expect(feed(filter("control"), chunks)).toEqual({ forwarded: [message], dropped: [] });
        const viewed = feed(filter("view"), chunks);
        expect(viewed.forwarded).toEqual(view === "forward" ? [message] : []);
        expect(viewed.dropped).toEqual(view === "forward" ? [] : [type]);
      }
    });
  });

  describe("with every message packed into one stream", () => {
    const stream = Buffer.concat(SAMPLES.map((sample) => sample.message));
    const viewable = Buffer.concat(SAMPLES.filter((s) => s.view === "forward").map((s) => s.message));
    const droppedInView = SAMPLES.filter((s) => s.view === "drop").map((s) => s.message[0]);

    it("forwards one chunk of allowed messages as one write", () => {
      expect(feed(filter("control"), [stream])).toEqual({ forwarded: [stream], dropped: [] });
      const viewed = feed(filter("view"), [
        Buffer.concat([sample("SetPixelFormat"), sample("SetEncodings")]),
      ]);
      expect(viewed.forwarded).toHaveLength(1);
    });

    it("keeps runs of allowed messages and drops the rest, in order", () => {
      const viewed = feed(filter("view"), [stream]);
      expect(Buffer.concat(viewed.forwarded)).toEqual(viewable);
      expect(viewed.dropped).toEqual(droppedInView);
      // Runs are split by dropped messages: SetPixelFormat..FramebufferUpdateRequest, then
      // EnableContinuousUpdates..ClientFence.
      expect(viewed.forwarded).toHaveLength(2);
    });

    it("gives the same result wherever the stream is cut", () => {
      for (const chunks of splits(stream)) {
        const controlled = feed(filter("control"), chunks);
        expect(Buffer.concat(controlled.forwarded)).toEqual(stream);
        const viewed = feed(filter("view"), chunks);
        expect(Buffer.concat(viewed.forwarded)).toEqual(viewable);
        expect(viewed.dropped).toEqual(droppedInView);
      }
    });

    it("gives the same result in chunks of 7 bytes", () => {
      const chunks = Array.from({ length: Math.ceil(stream.length / 7) }, (_, i) =>
        stream.subarray(7 * i, 7 * i + 7),
      );
      const viewed = feed(filter("view"), chunks);
      expect(Buffer.concat(viewed.forwarded)).toEqual(viewable);
      expect(viewed.dropped).toEqual(droppedInView);
    });
  });

  describe("in view mode, keeps the server's stream one the proxy can frame", () => {
    const setEncodings = (...encodings: number[]) =>
      bytes(2, 0, u16(encodings.length), ...encodings.map((encoding) => u32(encoding >>> 0)));
    // noVNC 1.7's list, with the extended clipboard (0xC0A1E5CE) among it
    const NOVNC = [1, 7, -260, 16, 21, 5, 2, 6, 0, -26, -254, -223, -224, -258, -261, -308, -309, -312];
    const NOVNC_TAIL = [-313, -307, 0xc0a1e5ce | 0, -316, 0x574d5664, -239];

    it("strips the extended clipboard and every encoding it cannot frame from SetEncodings", () => {
      const asked = setEncodings(...NOVNC, ...NOVNC_TAIL);
      const allowed = setEncodings(
        1,
        7,
        -260,
        16,
        5,
        2,
        6,
        0,
        -26,
        -254,
        -223,
        -224,
        -308,
        -312,
        -313,
        -307,
        -239,
      );
      expect(feed(filter("view"), [Buffer.concat([sample("FramebufferUpdateRequest"), asked])])).toEqual({
        forwarded: [sample("FramebufferUpdateRequest"), allowed],
        dropped: [],
      });
      expect(feed(filter("control"), [asked])).toEqual({ forwarded: [asked], dropped: [] });
    });

    it("reports the pixel format set before updates are asked for, and refuses a change after", () => {
      const formats: unknown[] = [];
      const viewing = new ClientMessageFilter({
        mode: "view",
        maxMessageBytes: 1024,
        onPixelFormat: (sizes) => formats.push(sizes),
      });
      const outcome = feed(viewing, [
        Buffer.concat([sample("SetPixelFormat"), sample("FramebufferUpdateRequest")]),
        sample("SetPixelFormat"),
      ]);
      expect(formats).toEqual([{ bytesPerPixel: 4, tightPixelBytes: 3 }]);
      expect(outcome.violation).toBe("protocol-violation");
      // in control mode the proxy does not read the server's stream, so the format is free
      const controlled = feed(filter("control"), [
        Buffer.concat([sample("FramebufferUpdateRequest"), sample("SetPixelFormat")]),
      ]);
      expect(controlled.violation).toBeUndefined();
    });

    it("refuses a pixel format RFB does not have", () => {
      const format24 = Buffer.from(sample("SetPixelFormat"));
      format24.writeUInt8(24, 4);
      expect(feed(filter("view"), [format24]).violation).toBe("protocol-violation");
    });
  });

  describe("ends the stream", () => {
    it.each([1, 7, 100, 127, 149, 249, 252, 254])("on unknown message type %i, in both modes", (type) => {
      for (const mode of ["view", "control"] as const) {
        const outcome = feed(filter(mode), [
          Buffer.concat([sample("FramebufferUpdateRequest"), bytes(type, filler(20))]),
        ]);
        expect(outcome).toEqual({ forwarded: [], dropped: [], violation: "protocol-violation" });
      }
    });

    it.each([
      ["a fence payload over 64 bytes", bytes(248, [0, 0, 0], u32(0), 65, filler(65))],
      ["an unknown QEMU submessage", bytes(255, 2, filler(10))],
      ["an unknown QEMU audio operation", bytes(255, 1, u16(3), filler(10))],
      [
        "a ClientCutText of length 0xFFFFFFFF (extended, too short for its flags)",
        bytes(6, [0, 0, 0], u32(-1 >>> 0), filler(10)),
      ],
      ["a ClientCutText of length 0xFFFFFFFD", bytes(6, [0, 0, 0], u32(-3 >>> 0), filler(10))],
    ])("on %s", (_, message) => {
      expect(feed(filter("control"), [message]).violation).toBe("protocol-violation");
    });

    it("after a violation, whatever follows", () => {
      const rejecting = filter("control");
      expect(feed(rejecting, [bytes(7)]).violation).toBe("protocol-violation");
      expect(feed(rejecting, [sample("FramebufferUpdateRequest")]).violation).toBe("protocol-violation");
    });

    it("on a ClientCutText over the limit as soon as its header is in, without waiting for the text", () => {
      const header = bytes(6, [0, 0, 0], u32(1000));
      for (const mode of ["view", "control"] as const) {
        expect(feed(filter(mode, 1000), [header]).violation).toBe("message-too-large");
      }
      // An extended-clipboard message counts its |length| the same way.
      expect(feed(filter("control", 1000), [bytes(6, [0, 0, 0], u32(-2000 >>> 0))]).violation).toBe(
        "message-too-large",
      );
    });

    it("but accepts a message of exactly the limit", () => {
      const text = Buffer.alloc(992, 0x61);
      const message = bytes(6, [0, 0, 0], u32(text.length), text);
      expect(feed(filter("control", 1000), splits(message)[500] ?? [])).toEqual({
        forwarded: [message],
        dropped: [],
      });
    });

    it("accepts the largest SetEncodings under a 256 KiB limit", () => {
      const message = Buffer.concat([bytes(2, 0, u16(65535)), Buffer.alloc(4 * 65535)]);
      expect(message.length).toBe(256 * 1024);
      const outcome = feed(filter("view"), [message]);
      expect(outcome.forwarded).toHaveLength(1);
      expect(outcome.forwarded[0]?.equals(message)).toBe(true);
    });
  });
});
