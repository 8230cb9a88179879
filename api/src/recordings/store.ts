import { createReadStream, promises as fs } from "node:fs";
import { join, resolve } from "node:path";
import { createSealing } from "../checkpoints/store/index.ts";
import type { EncryptionKeys } from "../credentials/cipher.ts";
import { HttpProblem } from "../http/problem.ts";

/** Why the store could not keep what it was given: a full disk, or any other failed write. */
export class RecordingStoreError extends Error {
  constructor(
    readonly code: "NO_SPACE" | "WRITE_FAILED",
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "RecordingStoreError";
  }
}

/**
 * Sealed recording objects on a filesystem:
 *
 *     <recordingId>/<seq>.chunk            one chunk of the record stream (whole records)
 *     <recordingId>/<exportId>.webm        a video made from it
 *
 * Every object is sealed with the checkpoint store's sealing under the `recordings` purpose, its
 * context naming what it is (`recording/<id>/<seq>`), so a chunk moved to another name or
 * recording fails to open. The database's index (recording_chunks) says which chunks exist: a
 * chunk written but not yet indexed (a crash between the two) is never read, and goes with its
 * recording.
 */
export interface RecordingStore {
  readonly rootDir: string;
  writeChunk(recordingId: string, seq: number, plaintext: Uint8Array): Promise<void>;
  readChunk(recordingId: string, seq: number): Promise<Buffer>;
  /** Seals the file at `source` (a finished video) into the store; returns its plaintext bytes. */
  keepExport(recordingId: string, exportId: string, source: string): Promise<number>;
  openExport(recordingId: string, exportId: string): AsyncGenerator<Buffer>;
  /** Removes the recording's chunks and videos. */
  remove(recordingId: string): Promise<void>;
}

/** Ids come from the database; anything else in a path is refused, never resolved. */
const NAME = /^[A-Za-z0-9-]{1,64}$/;

export function createRecordingStore(rootDir: string, keys: EncryptionKeys): RecordingStore {
  const root = resolve(rootDir);
  const sealing = createSealing(keys, {
    purpose: "recordings",
    damaged: (message) => new HttpProblem(500, "RECORDING_UNREADABLE", message),
  });
  const dirOf = (recordingId: string) => join(root, checked(recordingId));
  const chunkPath = (recordingId: string, seq: number) => join(dirOf(recordingId), `${seq}.chunk`);
  const exportPath = (recordingId: string, exportId: string) =>
    join(dirOf(recordingId), `${checked(exportId)}.webm`);
  const chunkContext = (recordingId: string, seq: number) => `recording/${recordingId}/${seq}`;
  const exportContext = (recordingId: string, exportId: string) =>
    `recording/${recordingId}/export/${exportId}`;

  return {
    rootDir: root,

    async writeChunk(recordingId, seq, plaintext) {
      const sealer = sealing.sealer(chunkContext(recordingId, seq));
      const sealed = Buffer.concat([sealer.update(Buffer.from(plaintext)), sealer.final()]);
      await writeSealed(chunkPath(recordingId, seq), [sealed]);
    },

    async readChunk(recordingId, seq) {
      const path = chunkPath(recordingId, seq);
      const sealed = await fs.readFile(path);
      return sealing.openBuffer(
        sealed,
        chunkContext(recordingId, seq),
        `chunk ${seq} of recording ${recordingId}`,
      );
    },

    async keepExport(recordingId, exportId, source) {
      const sealer = sealing.sealer(exportContext(recordingId, exportId));
      let bytes = 0;
      async function* sealed(): AsyncGenerator<Buffer> {
        for await (const piece of createReadStream(source)) {
          bytes += (piece as Buffer).byteLength;
          yield sealer.update(piece as Buffer);
        }
        yield sealer.final();
      }
      await writeSealed(exportPath(recordingId, exportId), sealed());
      return bytes;
    },

    openExport(recordingId, exportId) {
      return sealing.openFile(
        exportPath(recordingId, exportId),
        exportContext(recordingId, exportId),
        `video ${exportId} of recording ${recordingId}`,
      );
    },

    async remove(recordingId) {
      await fs.rm(dirOf(recordingId), { recursive: true, force: true });
    },
  };
}

/**
 * Writes a new object durably (fsynced before anyone indexes it); a write that fails leaves
 * nothing behind and is said as the store's own failure.
 */
async function writeSealed(path: string, parts: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<void> {
  try {
    await fs.mkdir(resolve(path, ".."), { recursive: true });
    const handle = await fs.open(path, "wx");
    try {
      for await (const part of parts) if (part.byteLength > 0) await handle.write(part);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await fs.rm(path, { force: true }).catch(() => undefined);
    throw storeFailure(error);
  }
}

function storeFailure(error: unknown): RecordingStoreError {
  const code = (error as NodeJS.ErrnoException).code ?? "";
  const message = error instanceof Error ? error.message : String(error);
  return ["ENOSPC", "EDQUOT"].includes(code)
    ? new RecordingStoreError("NO_SPACE", `the recording store is full: ${message}`, { cause: error })
    : new RecordingStoreError("WRITE_FAILED", `the recording store failed: ${message}`, { cause: error });
}

function checked(name: string): string {
  if (!NAME.test(name)) throw new RangeError(`${JSON.stringify(name)} is not a recording store name`);
  return name;
}
