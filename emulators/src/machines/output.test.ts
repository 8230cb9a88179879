import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ProcessOutput } from "./output.ts";

const MARK = Buffer.from("\0e2b-exit-0123456789abcdef");

/** One frame as the engine multiplexes it: stream type, three zero bytes, length, payload. */
function frame(stream: 1 | 2, payload: Buffer | string): Buffer {
  const data = Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(data.length, 4);
  return Buffer.concat([header, data]);
}

/** Feeds `bytes` in chunks of `size` (splitting frames and markers anywhere) and reads everything. */
async function readAll(bytes: Buffer, size: number) {
  const socket = new PassThrough();
  let released = false;
  const output = new ProcessOutput(socket, MARK, () => {
    released = true;
    socket.destroy();
  });
  for (let offset = 0; offset < bytes.length; offset += size)
    socket.write(bytes.subarray(offset, offset + size));
  socket.end();
  const first = await output.line();
  const streams = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  for await (const piece of output) streams[piece.stream].push(piece.data);
  return {
    first,
    stdout: Buffer.concat(streams.stdout),
    stderr: Buffer.concat(streams.stderr).toString(),
    exit: output.exit,
    released,
  };
}

describe("a process's output up to its end markers", () => {
  const binary = Buffer.from([0, 0x65, 0x32, 0, 0xff, 0, 0x0a, 0]); // NULs that begin like the marker
  const wire = Buffer.concat([
    frame(1, "pid 42\n"),
    frame(1, binary),
    frame(2, "warning\n"),
    frame(1, Buffer.concat([Buffer.from("tail"), MARK, Buffer.from(" exit 3\n")])),
    frame(2, Buffer.concat([MARK, Buffer.from("\n")])),
    frame(1, "written by a background child after the end"),
  ]);

  it.each([1, 3, 7, 64, wire.length])(
    "passes every byte before the markers on, read %i bytes at a time",
    async (size) => {
      const result = await readAll(wire, size);
      expect(result.first).toBe("pid 42");
      expect(result.stdout).toEqual(Buffer.concat([binary, Buffer.from("tail")]));
      expect(result.stderr).toBe("warning\n");
      expect(result.exit).toEqual({ code: 3, signal: null });
      expect(result.released).toBe(true);
    },
  );

  it("reports a signal as the parent saw it", async () => {
    const killed = Buffer.concat([
      frame(1, Buffer.concat([Buffer.from("pid 7\n"), MARK, Buffer.from(" signal 9\n")])),
      frame(2, Buffer.concat([MARK, Buffer.from("\n")])),
    ]);
    expect((await readAll(killed, 5)).exit).toEqual({ code: null, signal: 9 });
  });

  it("has no exit status when the connection ends before the markers", async () => {
    const cut = Buffer.concat([frame(1, "pid 7\npartial"), frame(1, MARK.subarray(0, 5))]);
    const result = await readAll(cut, 4);
    expect(result.stdout.toString()).toBe("partial");
    expect(result.exit).toBeNull();
    expect(result.released).toBe(false);
  });
});
