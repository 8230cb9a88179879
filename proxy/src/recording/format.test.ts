import { describe, expect, it } from "vitest";
import {
  concatBytes,
  encodeRecord,
  MAX_RECORD_AT,
  MAX_RECORD_PAYLOAD,
  RECORD_HEADER_BYTES,
  RecordingFormatError,
  type RecordingRecord,
  RecordKind,
  RecordReader,
  readRecords,
} from "./format.ts";

const records: RecordingRecord[] = [
  { kind: RecordKind.SERVER, at: 0, bytes: new Uint8Array([0, 1, 2, 3, 4]) },
  { kind: RecordKind.CLIENT, at: 3, bytes: new Uint8Array([5, 1, 0, 10, 0, 20]) },
  { kind: RecordKind.SERVER, at: 3, bytes: new Uint8Array(0) },
  { kind: RecordKind.SERVER, at: 70_000, bytes: new Uint8Array(300).fill(7) },
  { kind: RecordKind.END, at: 70_001, complete: false, reason: "the recording fell behind the screen" },
];
const stream = concatBytes(records.map(encodeRecord));

/** A record's bytes as the header says they are laid out. */
function raw(kind: number, at: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(RECORD_HEADER_BYTES + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, kind);
  view.setUint32(1, at);
  view.setUint32(5, payload.length);
  out.set(payload, RECORD_HEADER_BYTES);
  return out;
}

async function* chunked(bytes: Uint8Array, sizes: () => number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; ) {
    const size = Math.max(1, sizes());
    yield bytes.subarray(at, at + size);
    at += size;
  }
}

async function collect(source: AsyncIterable<RecordingRecord>): Promise<RecordingRecord[]> {
  const out: RecordingRecord[] = [];
  for await (const record of source) out.push(record);
  return out;
}

describe("the recording format", () => {
  it("lays a record out as kind, big-endian time and length, then the payload", () => {
    expect([
      ...encodeRecord({ kind: RecordKind.CLIENT, at: 0x01020304, bytes: new Uint8Array([9, 8]) }),
    ]).toEqual([2, 1, 2, 3, 4, 0, 0, 0, 2, 9, 8]);
    expect(
      new TextDecoder().decode(encodeRecord({ kind: RecordKind.END, at: 5, complete: true }).subarray(9)),
    ).toBe('{"complete":true}');
  });

  it("reads back what it wrote, whichever way the stream is cut", async () => {
    expect(await collect(readRecords(chunked(stream, () => stream.length)))).toEqual(records);
    expect(await collect(readRecords(chunked(stream, () => 1)))).toEqual(records);
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % 23;
    };
    expect(await collect(readRecords(chunked(stream, random)))).toEqual(records);
  });

  it("leaves out a record cut short, and says how much of it there was", async () => {
    const cut = stream.subarray(0, stream.length - 4);
    const read = await collect(readRecords(chunked(cut, () => 10)));
    expect(read).toEqual(records.slice(0, -1));
    const reader = new RecordReader();
    expect(reader.push(cut)).toEqual(records.slice(0, -1));
    expect(reader.ended).toBe(false);
    expect(reader.partialBytes).toBe(encodeRecord(records.at(-1) as RecordingRecord).length - 4);
    expect(reader.consumed).toBe(cut.length - reader.partialBytes);
    expect(reader.push(stream.subarray(stream.length - 4))).toEqual(records.slice(-1));
    expect(reader.ended).toBe(true);
    expect(reader.partialBytes).toBe(0);
  });

  it.each([
    ["an unknown kind", raw(9, 0, new Uint8Array(1)), /unknown record kind 9/],
    [
      "a length over the largest payload",
      raw(1, 0, new Uint8Array(0)).map((b, i) => (i === 5 ? 0x7f : b)),
      /record of/,
    ],
    [
      "time going back",
      concatBytes([raw(1, 10, new Uint8Array(1)), raw(2, 9, new Uint8Array(1))]),
      /time goes back/,
    ],
    [
      "bytes after END",
      concatBytes([
        encodeRecord({ kind: RecordKind.END, at: 1, complete: true }),
        raw(1, 2, new Uint8Array(1)),
      ]),
      /follow the recording's END/,
    ],
    ["an END that is not JSON", raw(3, 0, new TextEncoder().encode("{nope")), /not JSON/],
    ["an END of another shape", raw(3, 0, new TextEncoder().encode('{"complete":"yes"}')), /not \{ complete/],
  ])("reports damage: %s", (_name, bytes, message) => {
    const reader = new RecordReader();
    expect(() => reader.push(bytes)).toThrow(RecordingFormatError);
    expect(() => new RecordReader().push(bytes)).toThrow(message);
  });

  it("refuses to write a payload over the largest or a time out of range", () => {
    expect(() =>
      encodeRecord({ kind: RecordKind.SERVER, at: 0, bytes: new Uint8Array(MAX_RECORD_PAYLOAD + 1) }),
    ).toThrow(RecordingFormatError);
    expect(
      encodeRecord({ kind: RecordKind.SERVER, at: 0, bytes: new Uint8Array(MAX_RECORD_PAYLOAD) }),
    ).toHaveLength(RECORD_HEADER_BYTES + MAX_RECORD_PAYLOAD);
    for (const at of [-1, 1.5, MAX_RECORD_AT + 1])
      expect(() => encodeRecord({ kind: RecordKind.CLIENT, at, bytes: new Uint8Array(1) })).toThrow(
        /out of range/,
      );
  });
});
