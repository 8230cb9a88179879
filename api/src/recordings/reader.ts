import type { Database } from "@cubicle/db";
import { type RecordingRecord, readRecords } from "@cubicle/proxy/recording";
import type { Kysely } from "kysely";
import type { RecordingStore } from "./store.ts";

export interface ReaderDeps {
  db: Kysely<Database>;
  store: RecordingStore;
}

/**
 * A recording's record stream as stored, chunk after chunk (each opened and authenticated as it
 * is reached, so memory stays at one chunk): from the start, or from the chunk holding the moment
 * `fromMs` (chunks begin on record boundaries, so that is a record's start too).
 */
export async function* recordingBytes(
  deps: ReaderDeps,
  recordingId: string,
  options: { fromMs?: number } = {},
): AsyncGenerator<Buffer> {
  let query = deps.db
    .selectFrom("recording_chunks")
    .select("seq")
    .where("recording_id", "=", recordingId)
    .orderBy("seq");
  if (options.fromMs !== undefined) query = query.where("last_at", ">=", options.fromMs);
  for (const { seq } of await query.execute()) yield await deps.store.readChunk(recordingId, seq);
}

/** The recording's records, from its start. */
export function recordingRecords(deps: ReaderDeps, recordingId: string): AsyncGenerator<RecordingRecord> {
  return readRecords(recordingBytes(deps, recordingId));
}
