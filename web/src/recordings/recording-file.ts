import { RECORDING_FILE_MAGIC, type RecordingRecord, RecordReader } from "@cubicle/proxy/recording";

const MAGIC = new TextEncoder().encode(RECORDING_FILE_MAGIC);

/**
 * A recording file's records as its body arrives, one batch per piece read, so playing starts long
 * before a long recording is all here. The file must start with the recording header; a body cut
 * mid-record ends after its last whole record (as a reader of the format must treat it).
 */
export async function* recordBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<RecordingRecord[]> {
  const reader = new RecordReader();
  const stream = body.getReader();
  let header = new Uint8Array(0);
  try {
    for (;;) {
      const { done, value } = await stream.read();
      if (done) break;
      let piece = value;
      if (header.length < MAGIC.length) {
        const joined = new Uint8Array(header.length + piece.length);
        joined.set(header);
        joined.set(piece, header.length);
        if (joined.length < MAGIC.length) {
          header = joined;
          continue;
        }
        if (!MAGIC.every((byte, index) => joined[index] === byte))
          throw new Error("This is not a Cubicle recording (its file header is missing).");
        header = joined.subarray(0, MAGIC.length);
        piece = joined.subarray(MAGIC.length);
      }
      const records = reader.push(piece);
      if (records.length > 0) yield records;
    }
    if (header.length < MAGIC.length) throw new Error("The recording is empty.");
  } finally {
    stream.releaseLock();
  }
}
