import { Readable } from "node:stream";
import type { ReadableStream as NodeWebReadableStream } from "node:stream/web";

/**
 * A web byte stream pulled from an async iterable: each read asks for exactly one more chunk, so
 * back-pressure reaches the source, and an error mid-way errors the stream instead of ending it
 * as if it were complete. Cancelling returns the iterator (its `finally` blocks clean up).
 */
export function webStreamFrom(source: AsyncIterable<unknown>): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await iterator.next();
          if (next.done) {
            controller.close();
            return;
          }
          const chunk = next.value;
          if (chunk instanceof Uint8Array) controller.enqueue(chunk);
          else controller.enqueue(Buffer.from(String(chunk)));
        } catch (error) {
          controller.error(error);
        }
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 1 },
  );
}

export function nodeStreamFrom(stream: ReadableStream<Uint8Array>): Readable {
  return Readable.fromWeb(stream as unknown as NodeWebReadableStream<Uint8Array>);
}
