import type { OutputStream } from "@cubicle/host/docker-frames";
import { type CommandEvent, OUTPUT_TRUNCATED_MARKER } from "@cubicle/providers/contract";

export type { OutputStream };

/**
 * Turns a command's raw output into stdout/stderr events: UTF-8 decoded per stream (a character
 * split across chunks is kept whole), with one cap over both streams. Past the cap output is
 * dropped, the marker is emitted once on stdout, and nothing more is kept.
 */
export class OutputLimiter {
  private used = 0;
  private cut = false;
  private readonly decoders: Record<OutputStream, TextDecoder> = {
    stdout: new TextDecoder(),
    stderr: new TextDecoder(),
  };

  constructor(private readonly maxBytes: number) {}

  get truncated(): boolean {
    return this.cut;
  }

  write(stream: OutputStream, chunk: Uint8Array): CommandEvent[] {
    if (this.cut) return [];
    const events: CommandEvent[] = [];
    const room = this.maxBytes - this.used;
    if (chunk.length <= room) {
      this.used += chunk.length;
      const text = this.decoders[stream].decode(chunk, { stream: true });
      if (text) events.push({ type: stream, data: text });
      return events;
    }
    // cut on a character boundary so the kept part decodes cleanly
    let keep = room;
    while (keep > 0 && ((chunk[keep] ?? 0) & 0xc0) === 0x80) keep--;
    const text = this.decoders[stream].decode(chunk.subarray(0, keep), { stream: true });
    if (text) events.push({ type: stream, data: text });
    this.cut = true;
    this.used = this.maxBytes;
    events.push(...this.flush(true));
    events.push({ type: "stdout", data: OUTPUT_TRUNCATED_MARKER });
    return events;
  }

  /** Whatever partial characters remain, at the end of the output. */
  flush(force = false): CommandEvent[] {
    if (this.cut && !force) return [];
    const events: CommandEvent[] = [];
    for (const stream of ["stdout", "stderr"] as const) {
      const rest = this.decoders[stream].decode();
      if (rest) events.push({ type: stream, data: rest });
    }
    return events;
  }
}
