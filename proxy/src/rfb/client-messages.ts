/**
 * Frames the client→server RFB message stream (after ClientInit) so that the proxy can enforce a
 * screen's mode: every message is measured from its header, whole messages are passed on or dropped,
 * and anything the proxy cannot frame ends the connection, since one mis-framed byte would let the
 * rest of the stream be read as different messages.
 *
 * A `view` session's SetEncodings is cut down to what the proxy can frame in the server's stream
 * (server-messages.ts), and its pixel format, which sizes the pixels in that stream, is fixed once
 * it has asked for updates: RFB has no marker for where a new format starts, so a change while
 * updates flow would leave the proxy unsure where the server's messages begin.
 */
import { ClientMessageType } from "./protocol.ts";
import { type PixelSizes, pixelSizes, viewMayNegotiate } from "./server-messages.ts";

export { ClientMessageType };

/** What a viewer may send: it shapes what the viewer receives, never what happens on the desktop. */
const VIEW_MESSAGES: ReadonlySet<number> = new Set([
  ClientMessageType.SetPixelFormat,
  ClientMessageType.SetEncodings,
  ClientMessageType.FramebufferUpdateRequest,
  ClientMessageType.EnableContinuousUpdates,
  ClientMessageType.ClientFence,
]);

const MAX_FENCE_PAYLOAD = 64;

/** A message's total size, how many bytes are needed before that can be known, or why it cannot be framed. */
type Measure = { size: number } | { needHeader: number } | { invalid: string };

/** Measures the message starting at `offset`; `data` may end anywhere after that. */
export function measureClientMessage(data: Buffer, offset: number): Measure {
  const available = data.length - offset;
  const type = data.readUInt8(offset);
  const header = (bytes: number, size: () => Measure): Measure =>
    available < bytes ? { needHeader: bytes } : size();
  switch (type) {
    case ClientMessageType.SetPixelFormat:
      return { size: 20 };
    case ClientMessageType.SetEncodings:
      return header(4, () => ({ size: 4 + 4 * data.readUInt16BE(offset + 2) }));
    case ClientMessageType.FramebufferUpdateRequest:
    case ClientMessageType.EnableContinuousUpdates:
      return { size: 10 };
    case ClientMessageType.KeyEvent:
      return { size: 8 };
    case ClientMessageType.PointerEvent:
      return { size: 6 };
    case ClientMessageType.ClientCutText:
      // The extended-clipboard form announces itself with a negative length; its payload is |length|,
      // its 4 bytes of flags at least. A length of -1 to -3 (0xFFFFFFFF to 0xFFFFFFFD, a text of
      // about 4 GiB as RFC 6143 reads it) is neither form: taken as a few bytes, the rest of the
      // text would be read as messages.
      return header(8, () => {
        const length = data.readInt32BE(offset + 4);
        return length < 0 && length > -4
          ? { invalid: `ClientCutText of length ${length >>> 0}` }
          : { size: 8 + Math.abs(length) };
      });
    case ClientMessageType.ClientFence:
      return header(9, () => {
        const payload = data.readUInt8(offset + 8);
        return payload > MAX_FENCE_PAYLOAD
          ? { invalid: `fence payload of ${payload} bytes` }
          : { size: 9 + payload };
      });
    case ClientMessageType.Xvp:
      return { size: 4 };
    case ClientMessageType.SetDesktopSize:
      return header(8, () => ({ size: 8 + 16 * data.readUInt8(offset + 6) }));
    case ClientMessageType.Gii:
      // The high bit of the sub-type byte says whether the length that follows is big endian.
      return header(4, () => {
        const bigEndian = (data.readUInt8(offset + 1) & 0x80) !== 0;
        const length = bigEndian ? data.readUInt16BE(offset + 2) : data.readUInt16LE(offset + 2);
        return { size: 4 + length };
      });
    case ClientMessageType.Qemu:
      return header(2, () => measureQemu(data, offset, available));
    default:
      return { invalid: `unknown client message type ${type}` };
  }
}

function measureQemu(data: Buffer, offset: number, available: number): Measure {
  const subtype = data.readUInt8(offset + 1);
  if (subtype === 0) return { size: 12 }; // extended key event
  if (subtype !== 1) return { invalid: `unknown QEMU client message ${subtype}` };
  if (available < 4) return { needHeader: 4 };
  const operation = data.readUInt16BE(offset + 2);
  if (operation === 0 || operation === 1) return { size: 4 }; // audio enable / disable
  if (operation === 2) return { size: 10 }; // audio sample format
  return { invalid: `unknown QEMU audio operation ${operation}` };
}

/** Calls `each` with every message of `run`, a run of whole messages as the filter forwards them. */
export function eachClientMessage(run: Buffer, each: (message: Buffer) => void): void {
  for (let offset = 0; offset < run.length; ) {
    const measure = measureClientMessage(run, offset);
    // the filter measured these very messages before forwarding them
    if (!("size" in measure)) throw new Error("a forwarded run holds only whole client messages");
    each(run.subarray(offset, offset + measure.size));
    offset += measure.size;
  }
}

export type FilterStep = { forward: Buffer } | { dropped: number };

export type FilterResult =
  | { steps: FilterStep[] }
  | { violation: { reason: "protocol-violation" | "message-too-large"; detail: string } };

export interface ClientMessageFilterOptions {
  mode: "view" | "control";
  maxMessageBytes: number;
  /** `view` mode: the pixel format the browser set, before asking for any update. */
  onPixelFormat?(sizes: PixelSizes): void;
}

/** A SetEncodings with only the encodings a viewer may negotiate, in the order asked. */
function viewEncodings(message: Buffer): Buffer {
  const kept: number[] = [];
  for (let at = 4; at < message.length; at += 4) {
    const encoding = message.readInt32BE(at);
    if (viewMayNegotiate(encoding)) kept.push(encoding);
  }
  const out = Buffer.alloc(4 + 4 * kept.length);
  out.writeUInt8(ClientMessageType.SetEncodings, 0);
  out.writeUInt16BE(kept.length, 2);
  kept.forEach((encoding, i) => {
    out.writeInt32BE(encoding, 4 + 4 * i);
  });
  return out;
}

/**
 * Consumes the browser's bytes chunk by chunk. Each result lists, in stream order, runs of whole
 * messages to forward (adjacent allowed messages of one chunk come out as one buffer) and the types
 * of messages dropped. A message cut by a chunk boundary is held back until it is complete.
 */
export class ClientMessageFilter {
  readonly #options: ClientMessageFilterOptions;
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** How many bytes must be held before the next message can be measured or passed on. */
  #needed = 1;
  #failed = false;
  /** `view` mode: an update was asked for, so the pixel format may no longer change. */
  #updatesAsked = false;

  constructor(options: ClientMessageFilterOptions) {
    this.#options = options;
  }

  push(chunk: Buffer): FilterResult {
    if (this.#failed) {
      return { violation: { reason: "protocol-violation", detail: "stream already rejected" } };
    }
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes < this.#needed) return { steps: [] };

    const data = this.#held.length === 1 ? chunk : Buffer.concat(this.#held, this.#heldBytes);
    const steps: FilterStep[] = [];
    let offset = 0;
    let runStart = 0;
    const endRun = () => {
      if (offset > runStart) steps.push({ forward: data.subarray(runStart, offset) });
    };
    this.#needed = 1;
    while (offset < data.length) {
      const measure = measureClientMessage(data, offset);
      if ("invalid" in measure) return this.#fail("protocol-violation", measure.invalid);
      if ("needHeader" in measure) {
        this.#needed = measure.needHeader;
        break;
      }
      const type = data.readUInt8(offset);
      if (measure.size > this.#options.maxMessageBytes) {
        return this.#fail("message-too-large", `client message type ${type} of ${measure.size} bytes`);
      }
      if (offset + measure.size > data.length) {
        this.#needed = measure.size;
        break;
      }
      if (this.#options.mode === "control") {
        offset += measure.size;
        continue;
      }
      const message = data.subarray(offset, offset + measure.size);
      if (type === ClientMessageType.SetPixelFormat) {
        const sizes = pixelSizes(message.subarray(4, 20));
        if (!sizes) return this.#fail("protocol-violation", `${message.readUInt8(4)} bits per pixel`);
        if (this.#updatesAsked) {
          return this.#fail("protocol-violation", "pixel format changed after updates were asked for");
        }
        this.#options.onPixelFormat?.(sizes);
      } else if (
        type === ClientMessageType.FramebufferUpdateRequest ||
        type === ClientMessageType.EnableContinuousUpdates
      ) {
        this.#updatesAsked = true;
      }
      const encodings = type === ClientMessageType.SetEncodings ? viewEncodings(message) : undefined;
      const unchanged = encodings === undefined || encodings.length === message.length;
      if (VIEW_MESSAGES.has(type) && unchanged) {
        offset += measure.size;
        continue;
      }
      endRun();
      steps.push(encodings ? { forward: encodings } : { dropped: type });
      offset += measure.size;
      runStart = offset;
    }
    endRun();

    // Copy the unfinished message so that it does not pin the (possibly large) chunk it came in.
    const rest = data.subarray(offset);
    this.#held = rest.length > 0 ? [Buffer.from(rest)] : [];
    this.#heldBytes = rest.length;
    return { steps };
  }

  #fail(reason: "protocol-violation" | "message-too-large", detail: string): FilterResult {
    this.#failed = true;
    this.#held = [];
    this.#heldBytes = 0;
    return { violation: { reason, detail } };
  }
}
