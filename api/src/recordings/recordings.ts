import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import type { Logger } from "../observability/logger.ts";
import { RecordingExports } from "./exports.ts";
import type { RecordingStore } from "./store.ts";

/** The recordings' store and their exports in progress: what routes and housekeeping share. */
export class Recordings {
  readonly exports: RecordingExports;

  constructor(
    private readonly deps: { db: Kysely<Database>; logger: Logger },
    readonly store: RecordingStore,
  ) {
    this.exports = new RecordingExports({ ...deps, store });
  }

  /**
   * Deletes a recording and everything made of it: its exports in progress are stopped, its row
   * goes (its index and exports with it), then its sealed objects.
   */
  async remove(recordingId: string): Promise<void> {
    await this.exports.cancelFor(recordingId);
    await this.deps.db.deleteFrom("recordings").where("id", "=", recordingId).execute();
    await this.store.remove(recordingId);
  }
}
