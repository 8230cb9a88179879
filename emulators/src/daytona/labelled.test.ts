import { describe, expect, it } from "vitest";
import { Demuxer } from "./labelled.ts";

const log = Buffer.concat([
  Buffer.from("lost"),
  Buffer.from([1, 1, 1]),
  Buffer.from("out one\n"),
  Buffer.from([2, 2, 2]),
  Buffer.from("err\n"),
  Buffer.from([1, 1, 1]),
  Buffer.from("out two\n"),
]);

function demux(stream: "stdout" | "stderr", chunkSize: number): string {
  const demuxer = new Demuxer(stream);
  const parts: Buffer[] = [];
  for (let at = 0; at < log.length; at += chunkSize)
    parts.push(demuxer.push(log.subarray(at, at + chunkSize)));
  return Buffer.concat(parts).toString();
}

describe("Demuxer", () => {
  it("keeps one stream, whatever the chunks", () => {
    for (const size of [1, 2, 3, 5, log.length]) {
      expect(demux("stdout", size)).toBe("out one\nout two\n");
      expect(demux("stderr", size)).toBe("err\n");
    }
  });
});
