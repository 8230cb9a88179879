import { Worker } from "node:worker_threads";

/**
 * The worker's side, plain JavaScript so it runs without the TypeScript loader: batches of file
 * calls done in order, synchronously (each is a small write into the page cache; the thread
 * pool's hand-offs made them several times slower), each batch answered with its size so the
 * sender can bound what is queued. After a failure it does nothing more and says so at `finish`.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const path = require("node:path");
const open = new Map();
let failed = null;
function apply(m) {
  switch (m.op) {
    case "file":
      fs.writeFileSync(m.path, m.data, { flag: "wx" });
      break;
    case "open":
      open.set(m.path, fs.openSync(m.path, "wx"));
      break;
    case "write":
      fs.writeSync(open.get(m.path), m.data);
      break;
    case "close":
      fs.closeSync(open.get(m.path));
      open.delete(m.path);
      if (m.remove) fs.rmSync(m.path, { force: true });
      break;
    case "move":
      fs.mkdirSync(path.dirname(m.to), { recursive: true });
      fs.renameSync(m.path, m.to);
      break;
  }
}
parentPort.on("message", (batch) => {
  if (batch.finish) {
    parentPort.postMessage({ op: "finished", error: failed });
    return;
  }
  try {
    if (!failed) for (const m of batch.ops) apply(m);
  } catch (error) {
    failed = { code: error.code, message: error.message };
    for (const fd of open.values()) fs.closeSync(fd);
    open.clear();
  } finally {
    parentPort.postMessage({ op: "written", bytes: batch.bytes });
  }
});
`;

/** Bytes handed to the worker and not yet written, past which the sender waits. */
const QUEUED_LIMIT = 32 * 1024 * 1024;
/** Calls sent together: a message each cost more than writing a small object. */
const BATCH_BYTES = 1024 * 1024;
const BATCH_CALLS = 256;

interface Call {
  op: "file" | "open" | "write" | "close" | "move";
  path: string;
  data?: Uint8Array;
  remove?: boolean;
  to?: string;
}

interface Finished {
  op: "finished";
  error: { code?: string; message: string } | null;
}

/**
 * Writes a revision's new objects on a thread of its own, so that the archive is parsed, hashed
 * and sealed on the main one meanwhile: with thousands of small files, creating them is as much
 * work as all the rest. Calls are queued in order; a failure surfaces at `finish`.
 */
export class ObjectWriter {
  private started: Worker | null = null;
  private queued = 0;
  private wake: (() => void) | null = null;
  private finished: ((message: Finished) => void) | null = null;
  private exited: Error | null = null;

  /** Why the writer stopped before it was done, if it did. */
  get broken(): Error | null {
    return this.exited;
  }

  /** Started at its first call: a revision with no new content needs no thread. */
  private get worker(): Worker {
    if (this.started) return this.started;
    const worker = new Worker(WORKER_SOURCE, { eval: true });
    worker.on("message", (message: { op: "written"; bytes: number } | Finished) => {
      if (message.op === "written") {
        this.queued -= message.bytes;
        if (this.queued <= QUEUED_LIMIT) this.release();
      } else {
        this.finished?.(message);
      }
    });
    worker.once("error", (error) => this.stop(error));
    worker.once("exit", () => this.stop(new Error("the checkpoint object writer exited")));
    this.started = worker;
    return worker;
  }

  /** A whole object in one call. */
  file(path: string, data: Buffer): Promise<void> {
    return this.add({ op: "file", path, data });
  }

  open(path: string): Promise<void> {
    return this.add({ op: "open", path });
  }

  async write(path: string, data: Buffer): Promise<void> {
    if (data.byteLength > 0) await this.add({ op: "write", path, data });
  }

  close(path: string, options: { remove: boolean }): Promise<void> {
    return this.add({ op: "close", path, remove: options.remove });
  }

  /** Renames `path` to `to`, making `to`'s folder first. */
  move(path: string, to: string): Promise<void> {
    return this.add({ op: "move", path, to });
  }

  /** Waits until everything sent is done; throws the first failure (with its errno code). */
  async finish(): Promise<void> {
    if (this.exited) throw this.exited;
    this.flush();
    if (!this.started) return;
    const message = await new Promise<Finished>((done, fail) => {
      this.finished = done;
      this.wake = null;
      this.worker.once("exit", () => fail(this.exited));
      this.worker.postMessage({ finish: true });
    });
    if (message.error) {
      throw Object.assign(new Error(message.error.message), { code: message.error.code });
    }
  }

  async terminate(): Promise<void> {
    await this.started?.terminate();
  }

  private batch: Call[] = [];
  private batchBytes = 0;
  private transfers: ArrayBuffer[] = [];

  private async add(call: Call): Promise<void> {
    if (this.exited) throw this.exited;
    if (call.data) {
      // handed over, not copied, when the buffer is the whole of its memory (never Buffer's pool,
      // nor an empty buffer, which may be shared)
      const data = call.data;
      const own = data.byteLength > 0 && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
      call.data = own ? data : new Uint8Array(data);
      this.transfers.push(call.data.buffer as ArrayBuffer);
      this.batchBytes += call.data.byteLength;
    }
    this.batch.push(call);
    if (this.batchBytes < BATCH_BYTES && this.batch.length < BATCH_CALLS) return;
    this.flush();
    while (this.queued > QUEUED_LIMIT && !this.exited) {
      await new Promise<void>((done) => {
        this.wake = done;
      });
    }
  }

  private flush(): void {
    if (this.batch.length === 0) return;
    this.queued += this.batchBytes;
    this.worker.postMessage({ ops: this.batch, bytes: this.batchBytes }, this.transfers);
    this.batch = [];
    this.batchBytes = 0;
    this.transfers = [];
  }

  private release(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private stop(error: Error): void {
    this.exited ??= error;
    this.release();
  }
}
