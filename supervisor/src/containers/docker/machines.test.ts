import { frame } from "@cubicle/host/docker-frames";
import { describe, expect, it } from "vitest";
import { readyLineWatcher } from "./machines.ts";

const chunks = (bytes: Buffer, size: number) =>
  Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

describe("the boot watcher's ready line", () => {
  it("is heard on stdout however the frames are cut", () => {
    const output = Buffer.concat([
      frame(2, "screen 0: no view password given; using a random one\n"),
      frame(1, "screen 0: display :1, view port 6080\ncomputer "),
      frame(1, "ready\n"),
    ]);
    for (const size of [1, 3, 7, output.length]) {
      const sawReady = readyLineWatcher();
      const seen = chunks(output, size).map((chunk) => sawReady(chunk));
      // the line's end is the output's last byte: heard with the last chunk, not before
      expect(seen).toEqual([...seen.slice(0, -1).map(() => false), true]);
    }
  });

  it("is not a line that only ends with it, nor one on stderr, nor one not ended yet", () => {
    const sawReady = readyLineWatcher();
    expect(sawReady(frame(1, "the computer ready\n"))).toBe(false);
    expect(sawReady(frame(1, `${"x".repeat(40)}computer ready\n`))).toBe(false);
    expect(sawReady(frame(2, "computer ready\n"))).toBe(false);
    expect(sawReady(frame(1, "computer ready"))).toBe(false);
    expect(sawReady(frame(1, "\n"))).toBe(true);
  });
});
