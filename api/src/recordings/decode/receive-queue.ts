/**
 * noVNC's decoders read a rectangle from the receive queue of noVNC's socket wrapper (core/websock.js:
 * rQwait, rQshift8…, rQshiftBytes…) and return false when it holds too few bytes yet. This is that
 * queue for the SERVER bytes of a recording, with the same methods and the same behaviour, so that
 * the decoders run in Node unchanged; the browser's Websock cannot, being bound to a WebSocket.
 */
export class ReceiveQueue {
  #buffer = new Uint8Array(64 * 1024);
  /** The next byte to read (Websock's _rQi). */
  #start = 0;
  /** One past the last byte held (Websock's _rQlen). */
  #end = 0;

  /**
   * Appends bytes. Only between decoding steps: what a decoder was handed (rQshiftBytes without a
   * copy) stays valid until then.
   */
  push(bytes: Uint8Array): void {
    const held = this.#end - this.#start;
    if (this.#end + bytes.length > this.#buffer.length) {
      const buffer =
        held + bytes.length > this.#buffer.length
          ? new Uint8Array(Math.max(this.#buffer.length * 2, held + bytes.length))
          : this.#buffer;
      buffer.set(this.#buffer.subarray(this.#start, this.#end));
      this.#buffer = buffer;
      this.#start = 0;
      this.#end = held;
    }
    this.#buffer.set(bytes, this.#end);
    this.#end += bytes.length;
  }

  /** The next `bytes` bytes as big-endian numbers, not consumed; the caller checked rQlen. */
  peekView(bytes: number): DataView {
    return new DataView(this.#buffer.buffer, this.#buffer.byteOffset + this.#start, bytes);
  }

  rQlen(): number {
    return this.#end - this.#start;
  }

  rQpeek8(): number {
    return this.#buffer[this.#start] as number;
  }

  rQskipBytes(bytes: number): void {
    this.#start += bytes;
  }

  rQshift8(): number {
    return this.#shift(1);
  }

  rQshift16(): number {
    return this.#shift(2);
  }

  rQshift32(): number {
    return this.#shift(4);
  }

  #shift(bytes: number): number {
    let value = 0;
    for (let i = 0; i < bytes; i++) value = value * 256 + (this.#buffer[this.#start++] as number);
    return value;
  }

  rQshiftBytes(length: number, copy = true): Uint8Array {
    const bytes = this.rQpeekBytes(length, copy);
    this.#start += length;
    return bytes;
  }

  rQshiftTo(target: Uint8Array, length: number): void {
    target.set(this.rQshiftBytes(length, false));
  }

  rQpeekBytes(length: number, copy = true): Uint8Array {
    const end = this.#start + length;
    return copy ? this.#buffer.slice(this.#start, end) : this.#buffer.subarray(this.#start, end);
  }

  /** True when fewer than `bytes` are held; then steps back `goback` bytes already read, as Websock does. */
  rQwait(_what: string, bytes: number, goback = 0): boolean {
    if (this.rQlen() >= bytes) return false;
    if (goback > this.#start) throw new Error(`cannot step back ${goback} bytes`);
    this.#start -= goback;
    return true;
  }
}
