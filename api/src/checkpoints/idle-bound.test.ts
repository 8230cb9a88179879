import { describe, expect, it } from "vitest";
import { failWhenIdle } from "./idle-bound.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

async function readAll(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk);
  return text;
}

describe("failWhenIdle", () => {
  it("passes a stream through whole when each chunk comes within the bound", async () => {
    const source = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const part of ["one ", "two ", "three"]) {
          await new Promise((resolve) => setTimeout(resolve, 30));
          controller.enqueue(bytes(part));
        }
        controller.close();
      },
    });
    expect(await readAll(failWhenIdle(source, 200))).toBe("one two three");
  });

  it("fails with PROVIDER_FAILURE when a stream stalls, and cancels it", async () => {
    let cancelled: unknown = "not cancelled";
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes("first"));
      },
      cancel(reason) {
        cancelled = reason;
      },
    });
    await expect(readAll(failWhenIdle(source, 100))).rejects.toMatchObject({
      code: "PROVIDER_FAILURE",
      message: expect.stringContaining("stalled"),
    });
    expect(cancelled).toMatchObject({ code: "PROVIDER_FAILURE" });
  });

  it("does not count the time the reader takes between chunks", async () => {
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(bytes("x"));
      },
    });
    const reader = failWhenIdle(source, 50).getReader();
    await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect((await reader.read()).value).toEqual(bytes("x"));
    await reader.cancel();
  });
});
