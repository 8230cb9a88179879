import type { Duplex } from "node:stream";
import { FrameDemuxer, type OutputStream, type Piece } from "@cubicle/host/docker-frames";

/** How a process ended: its exit code, or the signal that killed it. */
export type ExitStatus = { code: number; signal: null } | { code: null; signal: number };

/**
 * One stream of a process up to its end marker (see exec.ts). A marker split across pieces is
 * found too: only bytes that could be the marker's start are held back, so ordinary output is
 * passed on at once. Whatever follows the marker (a background child still writing) is dropped, as
 * envd stops reading when its process has exited.
 */
class MarkedStream {
  private held: Buffer = Buffer.alloc(0);
  private trailer: Buffer | null = null;

  constructor(private readonly mark: Buffer) {}

  /** The text after the marker, up to its newline, once it is all there. */
  get ending(): string | null {
    const newline = this.trailer?.indexOf(10) ?? -1;
    return this.trailer && newline !== -1
      ? this.trailer.subarray(0, newline).toString("latin1").trim()
      : null;
  }

  /** The bytes of `data` that are the process's output. */
  push(data: Buffer): Buffer {
    if (this.trailer) {
      if (this.trailer.length < 64) this.trailer = Buffer.concat([this.trailer, data]);
      return Buffer.alloc(0);
    }
    const buffer = this.held.length > 0 ? Buffer.concat([this.held, data]) : data;
    const at = buffer.indexOf(this.mark);
    if (at !== -1) {
      this.trailer = Buffer.from(buffer.subarray(at + this.mark.length));
      this.held = Buffer.alloc(0);
      return buffer.subarray(0, at);
    }
    const keep = this.partialMark(buffer);
    this.held = Buffer.from(buffer.subarray(buffer.length - keep));
    return buffer.subarray(0, buffer.length - keep);
  }

  /** How many bytes at the end of `buffer` are the beginning of the marker. */
  private partialMark(buffer: Buffer): number {
    const from = Math.max(0, buffer.length - this.mark.length + 1);
    for (
      let start = buffer.indexOf(this.mark[0] ?? 0, from);
      start !== -1;
      start = buffer.indexOf(this.mark[0] ?? 0, start + 1)
    ) {
      if (buffer.subarray(start).equals(this.mark.subarray(0, buffer.length - start)))
        return buffer.length - start;
    }
    return 0;
  }
}

/**
 * A process's stdout and stderr pieces, read from the engine only as fast as they are asked for:
 * a consumer that stops asking stops the process at its next full pipe, so memory stays at a chunk.
 * The output ends once both streams have reached their end markers (`exit` then says how the
 * process ended), or when the connection to the engine breaks (`exit` stays null), so a cut-off
 * output is never taken for a complete one.
 */
export class ProcessOutput implements AsyncIterable<Piece> {
  private readonly splitter = new FrameDemuxer();
  private readonly chunks: AsyncIterator<Buffer>;
  private readonly streams: Record<OutputStream, MarkedStream>;
  private pending: Piece[] = [];
  private ended = false;
  private status: ExitStatus | null = null;

  constructor(
    socket: Duplex,
    mark: Buffer,
    private readonly onComplete: () => void,
  ) {
    this.chunks = socket[Symbol.asyncIterator]();
    this.streams = { stdout: new MarkedStream(mark), stderr: new MarkedStream(mark) };
  }

  get exit(): ExitStatus | null {
    return this.status;
  }

  /** The next piece, or null once the output has ended. */
  async next(): Promise<Piece | null> {
    while (this.pending.length === 0) {
      if (this.ended) return null;
      let chunk: IteratorResult<Buffer>;
      try {
        chunk = await this.chunks.next();
      } catch {
        chunk = { done: true, value: undefined };
      }
      if (chunk.done) {
        this.ended = true;
        return null;
      }
      for (const piece of this.splitter.push(chunk.value)) {
        const data = this.streams[piece.stream].push(piece.data);
        if (data.length > 0) this.pending.push({ stream: piece.stream, data });
      }
      this.checkComplete();
    }
    return this.pending.shift() ?? null;
  }

  /**
   * Stdout up to its first newline (without it), or null when the output ends first or the line
   * is longer than `maxBytes`. Stderr read on the way, and stdout after the newline, stay queued.
   */
  async line(maxBytes = 4_096): Promise<string | null> {
    const held: Piece[] = [];
    const parts: Buffer[] = [];
    let length = 0;
    for (;;) {
      const piece = await this.next();
      if (!piece || length > maxBytes) {
        this.pending.unshift(...held);
        return null;
      }
      if (piece.stream === "stderr") {
        held.push(piece);
        continue;
      }
      const newline = piece.data.indexOf(10);
      if (newline === -1) {
        parts.push(piece.data);
        length += piece.data.length;
        continue;
      }
      parts.push(piece.data.subarray(0, newline));
      const rest = piece.data.subarray(newline + 1);
      this.pending.unshift(...held, ...(rest.length > 0 ? [{ stream: "stdout" as const, data: rest }] : []));
      return Buffer.concat(parts).toString("utf8");
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Piece> {
    for (let piece = await this.next(); piece; piece = await this.next()) yield piece;
  }

  /** Both markers read: the status is known and the process's parent may go. */
  private checkComplete(): void {
    if (this.ended) return;
    const ending = this.streams.stdout.ending;
    if (ending === null || this.streams.stderr.ending === null) return;
    const [kind, value] = ending.split(" ");
    const number = Number(value);
    this.status = kind === "signal" ? { code: null, signal: number } : { code: number, signal: null };
    this.ended = true;
    this.onComplete();
  }
}
