import { Worker } from "node:worker_threads";

/**
 * The worker's side, plain JavaScript so it runs without the TypeScript loader: file calls done
 * in order, synchronously (each is a small write into the page cache; the thread pool's hand-offs
 * made them several times slower), each write answered with its size so the sender can bound
 * what is queued. After a failure it does nothing more and says so at `finish`.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
const path = require("node:path");
const open = new Map();
let failed = null;
parentPort.on("message", (m) => {
  if (m.op === "finish") {
    parentPort.postMessage({ op: "finished", error: failed });
    return;
  }
  let bytes = m.data ? m.data.byteLength : 0;
  try {
    if (failed) return;
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
        for (const [from, to] of m.moves) {
          fs.mkdirSync(path.dirname(to), { recursive: true });
          fs.renameSync(from, to);
        }
        break;
    }
  } catch (error) {
    failed = { code: error.code, message: error.message };
    for (const fd of open.values()) fs.closeSync(fd);
    open.clear();
  } finally {
    if (bytes > 0) parentPort.postMessage({ op: "written", bytes });
  }
});
`;

/** Bytes handed to the worker and not yet written, past which the sender waits. */
const QUEUED_LIMIT = 32 * 1024 * 1024;

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
    return this.send({ op: "file", path }, data);
  }

  open(path: string): void {
    this.worker.postMessage({ op: "open", path });
  }

  async write(path: string, data: Buffer): Promise<void> {
    if (data.byteLength > 0) await this.send({ op: "write", path }, data);
  }

  close(path: string, options: { remove: boolean }): void {
    this.worker.postMessage({ op: "close", path, remove: options.remove });
  }

  /** Renames each `[from, to]`, making `to`'s folder first. */
  move(moves: [string, string][]): void {
    this.worker.postMessage({ op: "move", moves });
  }

  /** Waits until everything sent is done; throws the first failure (with its errno code). */
  async finish(): Promise<void> {
    if (this.exited) throw this.exited;
    if (!this.started) return;
    const message = await new Promise<Finished>((done, fail) => {
      this.finished = done;
      this.wake = null;
      this.worker.once("exit", () => fail(this.exited));
      this.worker.postMessage({ op: "finish" });
    });
    if (message.error) {
      throw Object.assign(new Error(message.error.message), { code: message.error.code });
    }
  }

  async terminate(): Promise<void> {
    await this.started?.terminate();
  }

  private async send(message: Record<string, unknown>, data: Uint8Array): Promise<void> {
    if (this.exited) throw this.exited;
    // handed over, not copied, when the buffer is the whole of its memory (never Buffer's pool,
    // nor an empty buffer, which may be shared)
    const own = data.byteLength > 0 && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
    const bytes = own ? data : new Uint8Array(data);
    this.queued += bytes.byteLength;
    this.worker.postMessage({ ...message, data: bytes }, [bytes.buffer as ArrayBuffer]);
    while (this.queued > QUEUED_LIMIT && !this.exited) {
      await new Promise<void>((done) => {
        this.wake = done;
      });
    }
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
