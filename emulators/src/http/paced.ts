import type { Writable } from "node:stream";

/**
 * Writes `chunk` and resolves once what was buffered has been taken in (or the stream has closed),
 * so a producer that awaits it goes no faster than the client reads.
 */
export async function writePaced(stream: Writable, chunk: string | Buffer): Promise<void> {
  if (stream.write(chunk)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.on("drain", done);
    stream.on("close", done);
  });
}
