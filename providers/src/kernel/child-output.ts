import type { ChildProcess } from "node:child_process";

/**
 * A child's stdout as a Web stream, read only as fast as the consumer asks. Reading starts at
 * once, one chunk ahead: Node discards a child's unread output when it exits, so a small output
 * (a small home's tar) read late would otherwise come out empty. Once the output is drained the
 * stream ends if `outcome` gives null, and errors with what it gives otherwise, so a child that
 * dies mid-way never looks like a complete output. `cancel` runs when the consumer gives up.
 */
export function outputOf(
  child: ChildProcess,
  outcome: () => Promise<Error | null>,
  options: { cancel: () => void; afterChunk?: () => void },
): ReadableStream<Uint8Array> {
  const stdout = child.stdout;
  if (!stdout) throw new Error("the process has no output pipe");
  const chunks = stdout[Symbol.asyncIterator]();
  const readAhead = () => {
    const next = chunks.next();
    // awaited by the next pull; until then a failure must not count as unhandled
    next.catch(() => undefined);
    return next;
  };
  let ahead = readAhead();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await ahead;
          if (!next.done) {
            ahead = readAhead();
            const chunk = next.value as Buffer;
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            options.afterChunk?.();
            return;
          }
          const failure = await outcome();
          if (failure) controller.error(failure);
          else controller.close();
        } catch (error) {
          // the pipe broke: the child is ended, and its outcome (if it has one) tells why
          options.cancel();
          controller.error((await outcome().catch(() => null)) ?? error);
        }
      },
      cancel() {
        options.cancel();
      },
    },
    // no reading ahead of the consumer beyond the one chunk: the child blocks on its pipe meanwhile
    { highWaterMark: 0 },
  );
}
