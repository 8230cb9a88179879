/**
 * Docker multiplexes a non-TTY exec's stdout and stderr onto one stream of frames: an 8-byte header
 * (stream type, three zero bytes, payload length as uint32 big-endian), then the payload. This
 * splits the frames again without ever holding a whole frame: payload bytes are passed on as they
 * arrive, so memory stays at one chunk however large the output.
 */

/** Which of a process's output streams a piece came from. */
export type OutputStream = "stdout" | "stderr";

export interface Piece {
  stream: OutputStream;
  data: Buffer;
}

const HEADER_BYTES = 8;

export class FrameDemuxer {
  private header = Buffer.alloc(HEADER_BYTES);
  private headerFilled = 0;
  private remaining = 0;
  private current: OutputStream | null = null;

  /** The stream pieces in `chunk`, in order; stdin frames (type 0) are dropped. */
  push(chunk: Buffer): Piece[] {
    const pieces: Piece[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(HEADER_BYTES - this.headerFilled, chunk.length - offset);
        chunk.copy(this.header, this.headerFilled, offset, offset + take);
        this.headerFilled += take;
        offset += take;
        if (this.headerFilled < HEADER_BYTES) break;
        this.headerFilled = 0;
        const type = this.header[0];
        // 1 is stdout; 2 stderr and 3 (the daemon's own errors) both read as stderr
        this.current = type === 1 ? "stdout" : type === 2 || type === 3 ? "stderr" : null;
        this.remaining = this.header.readUInt32BE(4);
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - offset);
      if (this.current !== null && take > 0) {
        pieces.push({ stream: this.current, data: chunk.subarray(offset, offset + take) });
      }
      this.remaining -= take;
      offset += take;
    }
    return pieces;
  }

  /** True when the stream stopped inside a frame (it was cut off). */
  get midFrame(): boolean {
    return this.remaining > 0 || this.headerFilled > 0;
  }
}

/** One frame as Docker writes it; for tests. */
export function frame(stream: 0 | 1 | 2, payload: Buffer | string): Buffer {
  const data = typeof payload === "string" ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(HEADER_BYTES);
  header[0] = stream;
  header.writeUInt32BE(data.length, 4);
  return Buffer.concat([header, data]);
}
