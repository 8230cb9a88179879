import { ProviderError } from "@cubicle/providers/contract";

/**
 * The home archive as it arrives, failed with PROVIDER_FAILURE when the provider sends nothing for
 * `idleMs` while it is asked for more. A stream that stalls (a frozen sandbox, a connection nobody
 * closed) would otherwise hold the computer's checkpoint lock, and every stop waiting behind it,
 * forever. Time the reader spends storing what came does not count.
 */
export function failWhenIdle(source: ReadableStream<Uint8Array>, idleMs: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new ProviderError(
                "PROVIDER_FAILURE",
                `the home archive stalled: nothing arrived for ${Math.round(idleMs / 1000)} s`,
              ),
            ),
          idleMs,
        );
      });
      try {
        const { done, value } = await Promise.race([reader.read(), idle]);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        await reader.cancel(error).catch(() => undefined);
        controller.error(error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
