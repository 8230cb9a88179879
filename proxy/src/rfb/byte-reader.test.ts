import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ByteReader } from "./byte-reader.ts";

describe("ByteReader.skip", () => {
  it("passes over exactly the bytes asked for, across chunks and before they arrive", async () => {
    const stream = new PassThrough();
    const reader = new ByteReader(stream);
    stream.write(Buffer.from([1, 2, 3]));
    const skipped = reader.skip(7);
    stream.write(Buffer.from([4, 5]));
    stream.write(Buffer.from([6, 7, 8, 9]));
    await skipped;
    expect([...(await reader.read(2))]).toEqual([8, 9]);
  });

  it("fails when the stream ends before the bytes have passed", async () => {
    const stream = new PassThrough();
    const reader = new ByteReader(stream);
    const skipped = reader.skip(10);
    stream.end(Buffer.from([1, 2, 3]));
    await expect(skipped).rejects.toThrow("stream closed");
  });
});
