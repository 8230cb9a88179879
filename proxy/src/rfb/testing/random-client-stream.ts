/**
 * Random, valid client→server RFB streams for fuzzing the proxy's client filter: every message type
 * the filter frames, with random fields and sizes, each paired with what a `view` session must pass
 * on for it. The expectations are written out here from RFC 6143 and the extensions' specs, not taken
 * from the filter, so that the fuzz test checks the filter against an independent account.
 */

/** A small seeded generator (mulberry32): the same seed gives the same stream, so a failure can be replayed. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }

  bytes(length: number): Buffer {
    const out = Buffer.alloc(length + 3);
    for (let i = 0; i < length; i += 4) out.writeUInt32LE(Math.floor(this.next() * 4294967296), i);
    return out.subarray(0, length);
  }
}

/** Encodings a viewer may negotiate: those whose rectangles the proxy can frame, and level hints. */
export const VIEW_ENCODINGS = [
  0, 1, 2, 5, 6, 7, 16, -260, -223, -224, -232, -239, -240, -307, -308, -312, -313,
  // compression (-256..-247) and quality (-32..-23) levels, ends of both ranges included
  -256, -250, -247, -32, -28, -23,
] as const;

/** Encodings a viewer's SetEncodings loses: the extended clipboard and what the proxy cannot frame. */
export const STRIPPED_ENCODINGS = [
  0xc0a1e5ce | 0, // extended clipboard
  21, // JPEG
  8, // ZlibHex
  -257, // QEMU pointer motion change, next to the compression levels
  -246,
  -33,
  -22,
  -258, // QEMU extended key event
  -261, // QEMU audio
  -309, // xvp
  -316, // extended mouse buttons
  0x574d5664, // VMware cursor
  0x7fffffff,
  -0x80000000,
] as const;

export interface GeneratedMessage {
  name: string;
  type: number;
  bytes: Buffer;
  /** What a view session passes on in its place; undefined when it must drop it. */
  view: Buffer | undefined;
}

const message = (type: number, ...parts: Buffer[]) => Buffer.concat([Buffer.from([type]), ...parts]);
const u8 = (n: number) => Buffer.from([n]);
const u16 = (n: number) => {
  const out = Buffer.alloc(2);
  out.writeUInt16BE(n);
  return out;
};
const u32 = (n: number) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n >>> 0);
  return out;
};

function setPixelFormat(random: Random): GeneratedMessage {
  const bitsPerPixel = random.pick([8, 16, 32]);
  const format = Buffer.concat([
    u8(bitsPerPixel),
    u8(random.pick([8, 16, 24, 32])), // depth
    u8(random.int(0, 1)), // big endian
    u8(random.int(0, 1)), // true colour
    u16(random.pick([255, 31, 63, random.int(0, 65535)])),
    u16(random.pick([255, 31, 63, random.int(0, 65535)])),
    u16(random.pick([255, 31, 63, random.int(0, 65535)])),
    random.bytes(3), // shifts
    Buffer.alloc(3),
  ]);
  const bytes = message(0, Buffer.alloc(3), format);
  return { name: `SetPixelFormat(${bitsPerPixel} bpp)`, type: 0, bytes, view: bytes };
}

function setEncodings(random: Random): GeneratedMessage {
  const count = random.pick([0, random.int(1, 4), random.int(5, 30), random.int(31, 400)]);
  const encodings = Array.from({ length: count }, () =>
    random.next() < 0.7 ? random.pick(VIEW_ENCODINGS) : random.pick(STRIPPED_ENCODINGS),
  );
  const encode = (list: readonly number[]) => message(2, Buffer.alloc(1), u16(list.length), ...list.map(u32));
  const kept = encodings.filter((encoding) => (VIEW_ENCODINGS as readonly number[]).includes(encoding));
  return { name: `SetEncodings(${count})`, type: 2, bytes: encode(encodings), view: encode(kept) };
}

function updateRequest(type: 3 | 150, name: string, random: Random): GeneratedMessage {
  const area = [0, 0, 0, 0].map(() => u16(random.int(0, 65535)));
  const bytes = message(type, u8(random.int(0, 1)), ...area);
  return { name, type, bytes, view: bytes };
}

function keyEvent(random: Random): GeneratedMessage {
  const bytes = message(4, u8(random.int(0, 1)), Buffer.alloc(2), u32(random.int(0, 0xffffffff)));
  return { name: "KeyEvent", type: 4, bytes, view: undefined };
}

function pointerEvent(random: Random): GeneratedMessage {
  const bytes = message(5, u8(random.int(0, 255)), u16(random.int(0, 65535)), u16(random.int(0, 65535)));
  return { name: "PointerEvent", type: 5, bytes, view: undefined };
}

function clientCutText(random: Random): GeneratedMessage {
  if (random.next() < 0.3) {
    // The extended-clipboard form: a negative length, then |length| bytes starting with 4 of flags.
    const payload = random.int(4, 300);
    const bytes = message(6, Buffer.alloc(3), u32(-payload), random.bytes(payload));
    return { name: `ClientCutText(extended, ${payload})`, type: 6, bytes, view: undefined };
  }
  const length = random.pick([0, random.int(1, 20), random.int(21, 3000), random.int(3001, 70_000)]);
  const bytes = message(6, Buffer.alloc(3), u32(length), random.bytes(length));
  return { name: `ClientCutText(${length})`, type: 6, bytes, view: undefined };
}

function clientFence(random: Random): GeneratedMessage {
  const payload = random.pick([0, random.int(1, 63), 64]);
  const bytes = message(
    248,
    Buffer.alloc(3),
    u32(random.int(0, 0xffffffff)),
    u8(payload),
    random.bytes(payload),
  );
  return { name: `ClientFence(${payload})`, type: 248, bytes, view: bytes };
}

function xvp(random: Random): GeneratedMessage {
  const bytes = message(250, Buffer.alloc(1), u8(1), u8(random.int(2, 4)));
  return { name: "xvp", type: 250, bytes, view: undefined };
}

function setDesktopSize(random: Random): GeneratedMessage {
  const screens = random.int(0, 4);
  const bytes = message(
    251,
    Buffer.alloc(1),
    u16(random.int(1, 8192)),
    u16(random.int(1, 8192)),
    u8(screens),
    Buffer.alloc(1),
    random.bytes(16 * screens),
  );
  return { name: `SetDesktopSize(${screens} screens)`, type: 251, bytes, view: undefined };
}

function gii(random: Random): GeneratedMessage {
  const bigEndian = random.next() < 0.5;
  const length = random.int(0, 300);
  const header = Buffer.alloc(2);
  if (bigEndian) header.writeUInt16BE(length);
  else header.writeUInt16LE(length);
  const subtype = (bigEndian ? 0x80 : 0) | random.pick([0, 1]);
  const bytes = message(253, u8(subtype), header, random.bytes(length));
  return { name: `gii(${bigEndian ? "BE" : "LE"}, ${length})`, type: 253, bytes, view: undefined };
}

function qemu(random: Random): GeneratedMessage {
  const operation = random.int(0, 3);
  const bytes =
    operation === 3
      ? message(255, u8(0), u16(random.int(0, 1)), u32(random.int(0, 0xffffffff)), u32(random.int(0, 255)))
      : operation === 2
        ? message(255, u8(1), u16(2), u8(random.int(0, 5)), u8(random.int(1, 2)), u32(44_100))
        : message(255, u8(1), u16(operation));
  const name = operation === 3 ? "QEMU extended key event" : `QEMU audio ${operation}`;
  return { name, type: 255, bytes, view: undefined };
}

const GENERATORS: readonly ((random: Random) => GeneratedMessage)[] = [
  setPixelFormat,
  setEncodings,
  (random) => updateRequest(3, "FramebufferUpdateRequest", random),
  keyEvent,
  pointerEvent,
  clientCutText,
  (random) => updateRequest(150, "EnableContinuousUpdates", random),
  clientFence,
  xvp,
  setDesktopSize,
  gii,
  qemu,
];

/** The message types the generators make, for checking that a run covered them all. */
export const GENERATED_TYPES = [0, 2, 3, 4, 5, 6, 150, 248, 250, 251, 253, 255] as const;

/**
 * `count` random messages. `viewable` keeps the stream one a view session accepts whole: a viewer
 * may set its pixel format only before it first asks for updates (client-messages.ts says why).
 */
export function randomMessages(random: Random, count: number, viewable: boolean): GeneratedMessage[] {
  const messages: GeneratedMessage[] = [];
  let updatesAsked = false;
  while (messages.length < count) {
    const next = random.pick(GENERATORS)(random);
    if (viewable && updatesAsked && next.type === 0) continue;
    if (next.type === 3 || next.type === 150) updatesAsked = true;
    messages.push(next);
  }
  return messages;
}

/** Cuts `data` into chunks of random sizes: some bytes, some a few messages, some many. */
export function randomChunks(random: Random, data: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; ) {
    const roll = random.next();
    const size =
      roll < 0.4
        ? random.int(1, 4)
        : roll < 0.7
          ? random.int(5, 64)
          : roll < 0.9
            ? random.int(65, 2048)
            : random.int(2049, 80_000);
    chunks.push(data.subarray(at, at + size));
    at += size;
  }
  return chunks;
}
