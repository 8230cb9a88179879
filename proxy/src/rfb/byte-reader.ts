import type { Readable } from "node:stream";

/** Raised by a pending `read` when the stream ends, fails or the reader is cancelled. */
export class StreamEnded extends Error {
  override name = "StreamEnded";
}

/**
 * Reads exact byte counts from a stream, for the handshakes where both sides take turns with small
 * fixed-size messages. `release()` then hands the stream back, paused, with whatever was read beyond the
 * handshake (a client may send its first messages right behind ClientInit).
 */
export class ByteReader {
  readonly #stream: Readable;
  readonly #highWaterMark: number;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #waiter: { bytes: number; resolve(data: Buffer): void; reject(error: Error): void } | undefined;
  #ended: StreamEnded | undefined;

  /** Past `highWaterMark` buffered bytes the stream is paused, so a peer that floods a handshake costs no memory. */
  constructor(stream: Readable, highWaterMark = 64 * 1024) {
    this.#stream = stream;
    this.#highWaterMark = highWaterMark;
    stream.on("data", this.#onData);
    stream.on("end", this.#onEnd);
    stream.on("close", this.#onEnd);
    stream.on("error", this.#onError);
    stream.resume();
  }

  read(bytes: number): Promise<Buffer> {
    if (this.#waiter) return Promise.reject(new Error("ByteReader: one read at a time"));
    if (this.#buffered >= bytes) return Promise.resolve(this.#take(bytes));
    if (this.#ended) return Promise.reject(this.#ended);
    return new Promise((resolve, reject) => {
      this.#waiter = { bytes, resolve, reject };
      this.#stream.resume();
    });
  }

  /** Consumes `bytes` without gathering them into one buffer: for payloads that are only counted. */
  async skip(bytes: number): Promise<void> {
    for (let left = bytes; left > 0; ) {
      // Never more than the first buffered chunk holds, so that nothing is copied.
      const step = Math.min(left, this.#chunks[0]?.length ?? 1);
      await this.read(step);
      left -= step;
    }
  }

  async readU32(): Promise<number> {
    return (await this.read(4)).readUInt32BE(0);
  }

  async readU8(): Promise<number> {
    return (await this.read(1)).readUInt8(0);
  }

  /** Stops reading: the stream is left paused without this reader's listeners. */
  release(): Buffer {
    this.#detach();
    this.#stream.pause();
    const rest = Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#buffered = 0;
    return rest;
  }

  /** Fails a pending read and every later one, buffered bytes or not. */
  cancel(reason = "cancelled"): void {
    this.#chunks = [];
    this.#buffered = 0;
    this.#fail(new StreamEnded(reason));
    this.#detach();
  }

  #take(bytes: number): Buffer {
    const parts: Buffer[] = [];
    let missing = bytes;
    while (missing > 0) {
      const head = this.#chunks[0] as Buffer;
      if (head.length <= missing) {
        parts.push(head);
        this.#chunks.shift();
        missing -= head.length;
      } else {
        parts.push(head.subarray(0, missing));
        this.#chunks[0] = head.subarray(missing);
        missing = 0;
      }
    }
    this.#buffered -= bytes;
    if (this.#buffered < this.#highWaterMark) this.#stream.resume();
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  #fail(error: StreamEnded): void {
    this.#ended ??= error;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.reject(this.#ended);
  }

  #detach(): void {
    this.#stream.off("data", this.#onData);
    this.#stream.off("end", this.#onEnd);
    this.#stream.off("close", this.#onEnd);
    this.#stream.off("error", this.#onError);
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const data = typeof chunk === "string" ? Buffer.from(chunk, "latin1") : chunk;
    this.#chunks.push(data);
    this.#buffered += data.length;
    const waiter = this.#waiter;
    if (waiter && this.#buffered >= waiter.bytes) {
      this.#waiter = undefined;
      waiter.resolve(this.#take(waiter.bytes));
    }
    if (!this.#waiter && this.#buffered >= this.#highWaterMark) this.#stream.pause();
  };

  readonly #onEnd = (): void => this.#fail(new StreamEnded("stream closed"));

  readonly #onError = (error: Error): void => this.#fail(new StreamEnded(error.message));
}
