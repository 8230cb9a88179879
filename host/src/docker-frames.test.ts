import { describe, expect, it } from "vitest";
import { FrameDemuxer, frame } from "./docker-frames.ts";

function collect(chunks: Buffer[]) {
  const demux = new FrameDemuxer();
  const out = { stdout: "", stderr: "" };
  for (const chunk of chunks) {
    for (const piece of demux.push(chunk)) out[piece.stream] += piece.data.toString("utf8");
  }
  return { ...out, midFrame: demux.midFrame };
}

/** Splits a buffer into pieces of the given sizes (the rest in one). */
function split(buffer: Buffer, sizes: number[]): Buffer[] {
  const pieces: Buffer[] = [];
  let offset = 0;
  for (const size of sizes) {
    pieces.push(buffer.subarray(offset, offset + size));
    offset += size;
  }
  pieces.push(buffer.subarray(offset));
  return pieces;
}

describe("FrameDemuxer", () => {
  const stream = Buffer.concat([frame(1, "out one\n"), frame(2, "err one\n"), frame(1, "out two\n")]);

  it("separates stdout and stderr frames", () => {
    expect(collect([stream])).toEqual({ stdout: "out one\nout two\n", stderr: "err one\n", midFrame: false });
  });

  it("handles frames split anywhere, including inside headers", () => {
    for (let cut = 1; cut < stream.length; cut++) {
      expect(collect(split(stream, [cut]))).toMatchObject({
        stdout: "out one\nout two\n",
        stderr: "err one\n",
      });
    }
    expect(collect(split(stream, Array(stream.length).fill(1)))).toMatchObject({
      stdout: "out one\nout two\n",
    });
  });

  it("passes payload on as it arrives, without waiting for the whole frame", () => {
    const big = frame(1, Buffer.alloc(1_000_000, 0x61));
    const demux = new FrameDemuxer();
    const first = demux.push(big.subarray(0, 1_000));
    expect(first).toHaveLength(1);
    expect(first[0]?.data.length).toBe(992);
    expect(demux.midFrame).toBe(true);
    const rest = demux.push(big.subarray(1_000));
    expect(rest[0]?.data.length).toBe(1_000_000 - 992);
    expect(demux.midFrame).toBe(false);
  });

  it("drops stdin frames and keeps empty frames harmless", () => {
    expect(collect([Buffer.concat([frame(0, "in"), frame(1, ""), frame(2, "e")])])).toMatchObject({
      stdout: "",
      stderr: "e",
    });
  });

  it("notices a stream cut off inside a frame", () => {
    expect(collect([stream.subarray(0, 10)]).midFrame).toBe(true);
  });
});
