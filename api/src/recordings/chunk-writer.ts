import type { Database } from "@cubicle/db";
import { concatBytes, encodeRecord, type RecordingRecord } from "@cubicle/proxy/recording";
import type { Kysely } from "kysely";
import type { RecordingStore } from "./store.ts";

/** A chunk is cut once this much of whole records is pending (a record may take it past). */
export const CHUNK_BYTES = 256 * 1024;
/**
 * Pending records are written at least this often, so a crash of the api loses seconds, not a
 * chunk's worth, and `ingested_at` says the upload is alive even while the screen is still.
 */
export const FLUSH_EVERY_MS = 5_000;

export interface ChunkWriterDeps {
  db: Kysely<Database>;
  store: RecordingStore;
}

/**
 * Cuts one recording's records into sealed chunks that end on record boundaries, writes them,
 * and indexes each (its time range and offset) with the recording's size and duration. One
 * writer serves one part of the upload: it continues the chunks' seq and offset from where the
 * database says the recording stands (`start`), and `close` writes what is pending, so nothing of
 * a part lives on in this replica after it. Writes go
 * one at a time, in order; the first failure stops the writer: `failed` rejects with it at once
 * (an upload waiting on the proxy learns of it then) and every later call throws it.
 */
export class ChunkWriter {
  readonly failed: Promise<never>;
  #reject!: (error: Error) => void;
  #failure: Error | undefined;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #firstAt = 0;
  #lastAt = 0;
  #seq = 0;
  #offset = 0;
  #writes: Promise<void> = Promise.resolve();
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly deps: ChunkWriterDeps,
    private readonly recordingId: string,
    start: { seq: number; offset: number } = { seq: 0, offset: 0 },
  ) {
    this.#seq = start.seq;
    this.#offset = start.offset;
    this.failed = new Promise<never>((_, reject) => {
      this.#reject = reject;
    });
    // observed by whoever races it; unobserved, a failure is still thrown by the next call
    this.failed.catch(() => undefined);
    this.#timer = setInterval(() => void this.#enqueue(true).catch(() => undefined), FLUSH_EVERY_MS);
    this.#timer.unref();
  }

  /** Adds a whole record; waits while a full chunk is written (the upload's back-pressure). */
  async add(record: RecordingRecord): Promise<void> {
    if (this.#failure) throw this.#failure;
    const bytes = encodeRecord(record);
    if (this.#pendingBytes === 0) this.#firstAt = record.at;
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.byteLength;
    this.#lastAt = record.at;
    if (this.#pendingBytes >= CHUNK_BYTES) await this.#enqueue(false);
  }

  /** What stopped the writer, if something did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Writes whatever is pending, and stops. */
  async close(): Promise<void> {
    this.stop();
    await this.#enqueue(false);
  }

  /** Stops the timer, writing nothing more (after a failure). */
  stop(): void {
    clearInterval(this.#timer);
  }

  #enqueue(touch: boolean): Promise<void> {
    const next = this.#writes.then(() => this.#flush(touch));
    this.#writes = next.catch(() => undefined);
    return next;
  }

  async #flush(touch: boolean): Promise<void> {
    if (this.#failure) throw this.#failure;
    const { db, store } = this.deps;
    if (this.#pendingBytes === 0) {
      if (touch)
        await db
          .updateTable("recordings")
          .set({ ingested_at: new Date() })
          .where("id", "=", this.recordingId)
          .execute();
      return;
    }
    const plaintext = concatBytes(this.#pending, this.#pendingBytes);
    const chunk = {
      recording_id: this.recordingId,
      seq: this.#seq,
      first_at: this.#firstAt,
      last_at: this.#lastAt,
      offset: this.#offset,
      bytes: plaintext.byteLength,
    };
    this.#pending = [];
    this.#pendingBytes = 0;
    try {
      await store.writeChunk(this.recordingId, chunk.seq, plaintext);
      await db.transaction().execute(async (trx) => {
        await trx.insertInto("recording_chunks").values(chunk).execute();
        await trx
          .updateTable("recordings")
          .set((eb) => ({
            bytes: eb("bytes", "+", chunk.bytes),
            duration_ms: chunk.last_at,
            ingested_at: new Date(),
          }))
          .where("id", "=", this.recordingId)
          .execute();
      });
    } catch (error) {
      this.stop();
      this.#failure = error instanceof Error ? error : new Error(String(error));
      this.#reject(this.#failure);
      throw this.#failure;
    }
    this.#seq += 1;
    this.#offset += chunk.bytes;
  }
}
