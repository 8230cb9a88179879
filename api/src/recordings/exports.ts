import { promises as fs } from "node:fs";
import { join } from "node:path";
import type { Database, Recording, RecordingExport } from "@cubicle/db";
import type { Kysely } from "kysely";
import type { Logger } from "../observability/logger.ts";
import { exportVideo } from "./decode/index.ts";
import { recordingRecords } from "./reader.ts";
import type { RecordingStore } from "./store.ts";

/** Progress is saved at most this often: the dashboard polls it, ffmpeg reports far more often. */
const PROGRESS_EVERY_MS = 1_000;
/** Past this, a queued or running export no replica is making is said to have failed (housekeeping). */
export const EXPORT_ABANDONED_MS = 6 * 60 * 60 * 1000;

export interface ExportDeps {
  db: Kysely<Database>;
  store: RecordingStore;
  logger: Logger;
}

/**
 * Videos made from recordings in the background, in this process: each is queued, then running
 * (its progress saved as it goes), then ready (the video sealed into the store beside the
 * recording) or failed (with why). The plaintext video exists only while ffmpeg writes it, in the
 * store's own folder.
 */
export class RecordingExports {
  readonly #running = new Map<string, { recordingId: string; stop: AbortController; done: Promise<void> }>();

  constructor(private readonly deps: ExportDeps) {}

  /** Queues a WebM of the recording; it is made at once, in the background. */
  async request(recording: Recording, requestedBy: string): Promise<RecordingExport> {
    const row = await this.deps.db
      .insertInto("recording_exports")
      .values({
        recording_id: recording.id,
        workspace_id: recording.workspace_id,
        format: "webm",
        requested_by: requestedBy,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const stop = new AbortController();
    const done = this.#make(recording, row.id, stop.signal)
      .catch((error: unknown) => this.#failed(row.id, error))
      .finally(() => this.#running.delete(row.id));
    this.#running.set(row.id, { recordingId: recording.id, stop, done });
    return row;
  }

  /** Stops the recording's exports in progress (it is being deleted) and waits for them. */
  async cancelFor(recordingId: string): Promise<void> {
    const cancelled = [...this.#running.values()].filter((run) => run.recordingId === recordingId);
    for (const run of cancelled) run.stop.abort(new Error("the recording was deleted"));
    await Promise.all(cancelled.map((run) => run.done));
  }

  /** Stops every export in progress (the api is shutting down); each is marked failed. */
  async drain(): Promise<void> {
    for (const run of this.#running.values())
      run.stop.abort(new Error("the api shut down during the export"));
    await Promise.all([...this.#running.values()].map((run) => run.done));
  }

  async #make(recording: Recording, exportId: string, signal: AbortSignal): Promise<void> {
    const { db, store } = this.deps;
    await db.updateTable("recording_exports").set({ status: "running" }).where("id", "=", exportId).execute();
    const tmp = join(store.rootDir, ".tmp");
    await fs.mkdir(tmp, { recursive: true });
    const output = join(tmp, `${exportId}.webm`);
    let savedAt = 0;
    let saving: Promise<unknown> = Promise.resolve();
    try {
      await exportVideo(recordingRecords(this.deps, recording.id), {
        output,
        durationMs: recording.duration_ms,
        signal,
        onProgress: (fraction: number) => {
          const now = Date.now();
          if (now - savedAt < PROGRESS_EVERY_MS) return;
          savedAt = now;
          const progress = Math.min(1, Math.max(0, fraction));
          saving = saving.then(() =>
            db
              .updateTable("recording_exports")
              .set({ progress })
              .where("id", "=", exportId)
              .where("status", "=", "running")
              .execute()
              .catch((error: unknown) =>
                this.deps.logger.warn({ err: error, exportId }, "could not save export progress"),
              ),
          );
        },
      });
      signal.throwIfAborted();
      const bytes = await store.keepExport(recording.id, exportId, output);
      await saving;
      await db
        .updateTable("recording_exports")
        .set({ status: "ready", progress: 1, bytes, finished_at: new Date() })
        .where("id", "=", exportId)
        .execute();
    } finally {
      await fs.rm(output, { force: true });
    }
  }

  async #failed(exportId: string, error: unknown): Promise<void> {
    const reason = error instanceof Error ? error.message : String(error);
    this.deps.logger.warn({ err: error, exportId }, "a recording export failed");
    await this.deps.db
      .updateTable("recording_exports")
      .set({ status: "failed", error: reason, finished_at: new Date() })
      .where("id", "=", exportId)
      .execute()
      .catch((failure: unknown) =>
        this.deps.logger.error({ err: failure, exportId }, "could not record an export's failure"),
      );
  }
}
