/**
 * Daytona's session logs: one file per command in which each piece of output is preceded by a
 * 3-byte marker, 0x01 0x01 0x01 for stdout and 0x02 0x02 0x02 for stderr (the SDK's
 * `stdDemuxStream` splits them again).
 */

export type Stream = "stdout" | "stderr";

const MARKER_BYTE: Record<Stream, number> = { stdout: 0x01, stderr: 0x02 };

/**
 * Keeps one stream's bytes out of a labelled log read in chunks; a marker split across chunks is
 * held back until it is whole. Bytes before the first marker belong to neither, as in Daytona's
 * DemuxLogBytes.
 */
export class Demuxer {
  private current: Stream | null = null;
  private held: Buffer = Buffer.alloc(0);

  constructor(private readonly wanted: Stream) {}

  push(chunk: Buffer): Buffer {
    const buffer = this.held.length > 0 ? Buffer.concat([this.held, chunk]) : chunk;
    this.held = Buffer.alloc(0);
    const kept: Buffer[] = [];
    let start = 0;
    let at = nextCandidate(buffer, 0);
    while (at !== -1) {
      const byte = buffer[at];
      if (at + 3 > buffer.length) {
        if (buffer.subarray(at).every((value) => value === byte)) {
          this.keep(kept, buffer.subarray(start, at));
          this.held = Buffer.from(buffer.subarray(at));
          return Buffer.concat(kept);
        }
      } else if (buffer[at + 1] === byte && buffer[at + 2] === byte) {
        this.keep(kept, buffer.subarray(start, at));
        this.current = byte === MARKER_BYTE.stdout ? "stdout" : "stderr";
        start = at + 3;
        at = nextCandidate(buffer, start);
        continue;
      }
      at = nextCandidate(buffer, at + 1);
    }
    this.keep(kept, buffer.subarray(start));
    return Buffer.concat(kept);
  }

  private keep(kept: Buffer[], run: Buffer): void {
    if (run.length > 0 && this.current === this.wanted) kept.push(run);
  }
}

function nextCandidate(buffer: Buffer, from: number): number {
  const one = buffer.indexOf(MARKER_BYTE.stdout, from);
  const two = buffer.indexOf(MARKER_BYTE.stderr, from);
  if (one === -1) return two;
  if (two === -1) return one;
  return Math.min(one, two);
}

/** Perl that copies its stdin to its stdout, each chunk preceded by the marker of stream $ARGV[0]. */
export const LABELLER = `my $m = $ARGV[0] eq "stdout" ? "\\x01\\x01\\x01" : "\\x02\\x02\\x02";
while (my $n = sysread STDIN, my $b, 65536) { syswrite STDOUT, $m . $b }`;
