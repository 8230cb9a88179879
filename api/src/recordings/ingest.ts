import type { Database } from "@cubicle/db";
import { type RecordingEnd, RecordingFormatError, RecordKind, RecordReader } from "@cubicle/proxy/recording";
import type { Kysely } from "kysely";
import { HttpProblem } from "../http/problem.ts";
import type { Logger } from "../observability/logger.ts";
import { endRecording, openRecordingPart, setRecordingSize, touchRecording } from "./catalogue.ts";
import { ChunkWriter } from "./chunk-writer.ts";
import type { RecordingStore } from "./store.ts";

export interface IngestDeps {
  db: Kysely<Database>;
  store: RecordingStore;
  logger: Logger;
}

export const PROXY_WENT_AWAY = "the proxy went away mid-recording";

/**
 * Stores one part of the proxy's upload of a recording as it arrives. The proxy sends a recording
 * in parts, one request each (no request outlives the api's requestTimeout), every part whole
 * records and saying where it continues the stream (`offset`, the bytes of its earlier parts):
 * part 0 moves `pending → recording`, a later part must continue exactly what is stored
 * (openRecordingPart). Every whole record goes into sealed chunks (the body is read no faster
 * than they are written), continuing the seq and offset the database holds. A part whose body
 * ends without END has all its records written (its last chunk closed) and leaves the recording
 * `recording` for the next part, which may reach another replica; the part with END ends it
 * `complete` or `incomplete` as END says. A part that breaks off keeps every whole record it
 * brought and ends the recording incomplete. A store that cannot write ends the recording
 * incomplete and answers 507 at once (RECORDING_STORE_FAILED): the proxy stops recording, the
 * screen goes on.
 */
export async function ingestRecording(
  deps: IngestDeps,
  recordingId: string,
  offset: number,
  body: ReadableStream<Uint8Array> | null,
): Promise<void> {
  const part = await openRecordingPart(deps.db, recordingId, offset);
  const writer = new ChunkWriter(deps, recordingId, part);
  const reader = new RecordReader();
  const input = body?.getReader();
  let end: RecordingEnd | undefined;
  let sized = part.sized;
  try {
    for (;;) {
      // a failed write is heard of at once, even while the proxy sends nothing
      const next = input ? await Promise.race([input.read(), writer.failed]) : { done: true as const };
      if (next.done) break;
      for (const record of reader.push(next.value)) {
        // the reader keeps time from going back within a part; across parts it is checked here
        if (record.at < part.lastAt)
          throw new RecordingFormatError(
            `record time goes back to ${record.at} ms, before the ${part.lastAt} ms already stored`,
          );
        await writer.add(record);
        if (record.kind === RecordKind.END) end = record;
        else if (!sized && record.kind === RecordKind.SERVER && record.bytes.byteLength >= 4) {
          sized = true;
          await setRecordingSize(deps.db, recordingId, serverInitSize(record.bytes));
        }
      }
    }
    // a part ends on a record boundary: the next one starts with a whole record
    if (reader.partialBytes > 0)
      throw new RecordingFormatError(`the part ends ${reader.partialBytes} bytes into a record`);
    await writer.close();
  } catch (error) {
    writer.stop();
    await input?.cancel().catch(() => undefined);
    if (error === writer.failure) {
      const reason = error instanceof Error ? error.message : String(error);
      await endRecording(deps.db, recordingId, { complete: false, reason });
      deps.logger.warn({ err: error, recordingId }, "a recording could not be stored; it ends incomplete");
      throw new HttpProblem(507, "RECORDING_STORE_FAILED", `The recording could not be stored: ${reason}`);
    }
    // the whole records read so far are kept: those pending are written now
    const kept = await writer.close().then(
      () => true,
      () => false,
    );
    const reason =
      error instanceof RecordingFormatError
        ? `the recording stream was damaged: ${error.message}`
        : PROXY_WENT_AWAY;
    await endRecording(deps.db, recordingId, { complete: false, reason });
    if (!kept)
      deps.logger.warn({ recordingId }, "the last records of a broken-off recording could not be kept");
    if (error instanceof RecordingFormatError)
      throw new HttpProblem(400, "RECORDING_MALFORMED", `The recording stream is damaged: ${error.message}`);
    return;
  }
  if (end) await endRecording(deps.db, recordingId, end);
  // more parts follow; if none does, housekeeping ends the recording once it has gone quiet
  else await touchRecording(deps.db, recordingId);
}

/** ServerInit begins with the framebuffer's width and height (u16 big-endian each). */
function serverInitSize(bytes: Uint8Array): { width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, 4);
  return { width: view.getUint16(0), height: view.getUint16(2) };
}
