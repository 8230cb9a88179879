/**
 * A screen recording as bytes: what the proxy streams to api while a socket lives, what api seals
 * into the store, what a download holds after its file header, and what the dashboard's player and
 * api's decoder read. One record after another:
 *
 *     kind (u8) | at (u32 BE, milliseconds since the recording began) | length (u32 BE) | payload
 *
 *   SERVER  bytes of the RFB server→client stream exactly as the viewer received them, in order;
 *           the first SERVER record begins with ServerInit (the handshake before it is the proxy's)
 *   CLIENT  one whole client→server message the proxy passed on to the screen (SetPixelFormat,
 *           SetEncodings, update requests, and for a control socket the person's keys, pointer
 *           and clipboard), so a replay knows the pixel format and shows what was typed
 *   END     the last record: a JSON payload `{ "complete": boolean, "reason"?: string }`
 *
 * A stream cut short (the proxy killed, a disk full) simply stops after its last whole record; a
 * reader treats a missing END as incomplete. Plain Uint8Array and DataView, no Buffer: the
 * dashboard reads the same records in the browser.
 */
export const RecordKind = { SERVER: 1, CLIENT: 2, END: 3 } as const;
export type RecordKind = (typeof RecordKind)[keyof typeof RecordKind];

export const RECORD_HEADER_BYTES = 9;
/** A record's payload never exceeds this; a writer splits server bytes to stay under it. */
export const MAX_RECORD_PAYLOAD = 1 << 20;
/** Recordings end at 2^32 ms (49 days); a socket never lives that long. */
export const MAX_RECORD_AT = 0xffff_ffff;

/** The first bytes of a downloaded recording file, before its records. */
export const RECORDING_FILE_MAGIC = "CUBICLE-RFB-RECORDING 1\n";

export type RecordingRecord =
  | { kind: typeof RecordKind.SERVER; at: number; bytes: Uint8Array }
  | { kind: typeof RecordKind.CLIENT; at: number; bytes: Uint8Array }
  | { kind: typeof RecordKind.END; at: number; complete: boolean; reason?: string };

export interface RecordingEnd {
  complete: boolean;
  reason?: string;
}

export class RecordingFormatError extends Error {}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** One record's bytes: header and payload. */
export function encodeRecord(record: RecordingRecord): Uint8Array {
  const payload =
    record.kind === RecordKind.END
      ? textEncoder.encode(
          JSON.stringify(
            record.reason === undefined
              ? { complete: record.complete }
              : { complete: record.complete, reason: record.reason },
          ),
        )
      : record.bytes;
  if (payload.length > MAX_RECORD_PAYLOAD) throw new RecordingFormatError("record payload too large");
  if (!Number.isInteger(record.at) || record.at < 0 || record.at > MAX_RECORD_AT) {
    throw new RecordingFormatError(`record time ${record.at} is out of range`);
  }
  const out = new Uint8Array(RECORD_HEADER_BYTES + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, record.kind);
  view.setUint32(1, record.at);
  view.setUint32(5, payload.length);
  out.set(payload, RECORD_HEADER_BYTES);
  return out;
}

/**
 * Frames records out of a byte stream that arrives in pieces of any size. Anything that is not a
 * record (an unknown kind, an oversized length, time going backwards, bytes after END) throws:
 * a recording is written by the proxy alone, so damage is reported, not skipped over.
 */
export class RecordReader {
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #lastAt = 0;
  #ended = false;
  /** Bytes of whole records returned so far. */
  consumed = 0;

  /** The whole records completed by this chunk. */
  push(chunk: Uint8Array): RecordingRecord[] {
    if (chunk.length > 0) {
      this.#pending.push(chunk);
      this.#pendingBytes += chunk.length;
    }
    const records: RecordingRecord[] = [];
    while (this.#pendingBytes >= RECORD_HEADER_BYTES) {
      const header = this.#peek(RECORD_HEADER_BYTES);
      const view = new DataView(header.buffer, header.byteOffset, RECORD_HEADER_BYTES);
      const kind = view.getUint8(0);
      const at = view.getUint32(1);
      const length = view.getUint32(5);
      if (this.#ended) throw new RecordingFormatError("bytes follow the recording's END record");
      if (kind !== RecordKind.SERVER && kind !== RecordKind.CLIENT && kind !== RecordKind.END) {
        throw new RecordingFormatError(`unknown record kind ${kind} at byte ${this.consumed}`);
      }
      if (length > MAX_RECORD_PAYLOAD) {
        throw new RecordingFormatError(`record of ${length} bytes at byte ${this.consumed}`);
      }
      if (at < this.#lastAt) throw new RecordingFormatError(`record time goes back at byte ${this.consumed}`);
      if (this.#pendingBytes < RECORD_HEADER_BYTES + length) break;
      const whole = this.#take(RECORD_HEADER_BYTES + length);
      const payload = whole.subarray(RECORD_HEADER_BYTES);
      this.consumed += whole.length;
      this.#lastAt = at;
      records.push(decodePayload(kind, at, payload));
      if (kind === RecordKind.END) this.#ended = true;
    }
    return records;
  }

  /** Bytes of a record not yet whole: a recording that stopped here was cut mid-record. */
  get partialBytes(): number {
    return this.#pendingBytes;
  }

  get ended(): boolean {
    return this.#ended;
  }

  #peek(bytes: number): Uint8Array {
    const first = this.#pending[0] as Uint8Array;
    if (first.length >= bytes) return first.subarray(0, bytes);
    const joined = concatBytes(this.#pending, this.#pendingBytes);
    this.#pending = [joined];
    return joined.subarray(0, bytes);
  }

  #take(bytes: number): Uint8Array {
    let first = this.#pending[0] as Uint8Array;
    if (first.length < bytes) {
      first = concatBytes(this.#pending, this.#pendingBytes);
      this.#pending = [first];
    }
    const taken = first.subarray(0, bytes);
    if (first.length === bytes) this.#pending.shift();
    else this.#pending[0] = first.subarray(bytes);
    this.#pendingBytes -= bytes;
    return taken;
  }
}

function decodePayload(kind: number, at: number, payload: Uint8Array): RecordingRecord {
  if (kind === RecordKind.SERVER) return { kind, at, bytes: payload };
  if (kind === RecordKind.CLIENT) return { kind, at, bytes: payload };
  let end: unknown;
  try {
    end = JSON.parse(textDecoder.decode(payload));
  } catch {
    throw new RecordingFormatError("END record is not JSON");
  }
  const { complete, reason } = (end ?? {}) as { complete?: unknown; reason?: unknown };
  if (typeof complete !== "boolean" || (reason !== undefined && typeof reason !== "string")) {
    throw new RecordingFormatError("END record is not { complete, reason? }");
  }
  return reason === undefined
    ? { kind: RecordKind.END, at, complete }
    : { kind: RecordKind.END, at, complete, reason };
}

export function concatBytes(parts: readonly Uint8Array[], total?: number): Uint8Array {
  const out = new Uint8Array(total ?? parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Every record of a stream of chunks, in order; a cut-off last record is left out. */
export async function* readRecords(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<RecordingRecord> {
  const reader = new RecordReader();
  for await (const chunk of chunks) yield* reader.push(chunk);
}
