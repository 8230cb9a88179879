/**
 * Newline-delimited JSON: one value per line. The supervisor streams command events this way, and
 * its client reads them back; both sides hold at most one line at a time.
 */

const encoder = new TextEncoder();

export function ndjsonLine(value: unknown): Uint8Array {
  return encoder.encode(`${JSON.stringify(value)}\n`);
}

/** An empty line: readers skip it; it keeps idle connections (and their timeouts) alive. */
const HEARTBEAT = encoder.encode("\n");
export const HEARTBEAT_MS = 15_000;

/**
 * A byte stream of `source`'s values, one per line, pulled only as fast as the reader reads. It
 * starts with an empty line, so the response headers leave at once, and repeats one whenever the
 * source is silent for `heartbeatMs` (a command may print nothing for minutes; HTTP clients time
 * out idle bodies). `onCancel` runs when the reader goes away before the end.
 */
export function ndjsonStream<T>(
  source: AsyncIterator<T>,
  onCancel: () => void,
  heartbeatMs = HEARTBEAT_MS,
): ReadableStream<Uint8Array> {
  let pending: Promise<IteratorResult<T>> | null = null;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(HEARTBEAT);
      },
      async pull(controller) {
        try {
          pending ??= source.next();
          const current = pending;
          // a fresh promise per pull (not a race against a long-lived one, which would keep every result)
          const next = await new Promise<IteratorResult<T> | "idle">((resolve, reject) => {
            const timer = setTimeout(() => resolve("idle"), heartbeatMs);
            current.then(
              (value) => {
                clearTimeout(timer);
                resolve(value);
              },
              (error: unknown) => {
                clearTimeout(timer);
                reject(error);
              },
            );
          });
          if (next === "idle") {
            controller.enqueue(HEARTBEAT);
            return;
          }
          pending = null;
          if (next.done) controller.close();
          else controller.enqueue(ndjsonLine(next.value));
        } catch (error) {
          controller.error(error);
        }
      },
      async cancel() {
        onCancel();
        await source.return?.();
      },
    },
    { highWaterMark: 1 },
  );
}

/** Reads newline-delimited JSON values from a byte stream; a line longer than `maxLineBytes` fails. */
export async function* parseNdjson(
  stream: ReadableStream<Uint8Array>,
  maxLineBytes = 16 * 1024 * 1024,
): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let buffered = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line !== "") yield JSON.parse(line);
        newline = buffered.indexOf("\n");
      }
      if (buffered.length > maxLineBytes) throw new Error(`an NDJSON line exceeds ${maxLineBytes} bytes`);
      if (done) break;
    }
    if (buffered.trim() !== "") yield JSON.parse(buffered);
  } finally {
    // stops the transfer when the consumer leaves early
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
