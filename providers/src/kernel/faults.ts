import { ProviderError } from "../contract/index.ts";

/**
 * Failure injection for the shared fault suite. A provider consults its plan at the real step
 * where such a failure happens in production (a machine that does not come up, an archive
 * stream that breaks halfway) and fails there the way reality would, so the suite exercises the
 * provider's own error handling, not a wrapper's.
 */
export type FaultPoint = "provision" | "export" | "import";

export interface FaultPlan {
  /** True once for each armed failure at `point`; the caller must then fail. */
  take(point: FaultPoint): boolean;
}

/** An archive cut short (a checkpoint store that lost its tail): extraction starts, then fails. */
export function truncateAfterFirstChunk(source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  return new ReadableStream({
    async start(controller) {
      const { value } = await reader.read();
      if (value) controller.enqueue(value.subarray(0, Math.max(1, Math.floor(value.length / 2))));
      await reader.cancel().catch(() => {});
      controller.close();
    },
  });
}

/** The failure a broken network or a dying peer causes: the archive stops halfway. */
export function breakAfterFirstChunk(source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let sent = false;
  return new ReadableStream({
    async pull(controller) {
      if (sent) {
        await reader.cancel().catch(() => {});
        controller.error(new ProviderError("PROVIDER_FAILURE", "the archive stream broke"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        controller.error(new ProviderError("PROVIDER_FAILURE", "the archive stream broke"));
        return;
      }
      sent = true;
      controller.enqueue(value);
    },
  });
}
