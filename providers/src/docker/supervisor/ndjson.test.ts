import { describe, expect, it } from "vitest";
import { ndjsonStream, parseNdjson } from "./ndjson.ts";

async function* values<T>(items: T[]) {
  yield* items;
}

async function collect(stream: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const value of stream) out.push(value);
  return out;
}

/** A byte stream delivering `bytes` in pieces of `size`. */
function chunked(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + size));
      offset += size;
    },
  });
}

describe("NDJSON framing", () => {
  const events = [
    { type: "stdout", data: "line\nwith newline" },
    { type: "stderr", data: "ünïcödé €" },
    { type: "exit", code: 0, truncated: false },
  ];

  it("writes one JSON value per line, after an empty line that sends the headers at once", async () => {
    const text = await new Response(ndjsonStream(values(events), () => undefined)).text();
    expect(text.split("\n")).toEqual(["", ...events.map((event) => JSON.stringify(event)), ""]);
  });

  it("sends empty lines while the source is silent, which readers skip", async () => {
    async function* slow() {
      await new Promise((resolve) => setTimeout(resolve, 120));
      yield { type: "exit", code: 0, truncated: false };
    }
    const bytes = new Uint8Array(await new Response(ndjsonStream(slow(), () => undefined, 25)).arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    expect(text.startsWith("\n\n\n")).toBe(true);
    expect(await collect(parseNdjson(chunked(bytes, 4)))).toEqual([
      { type: "exit", code: 0, truncated: false },
    ]);
  });

  it("reads values back whatever the chunking, multi-byte characters included", async () => {
    const bytes = new Uint8Array(
      await new Response(ndjsonStream(values(events), () => undefined)).arrayBuffer(),
    );
    for (const size of [1, 2, 3, 7, 64, bytes.length]) {
      expect(await collect(parseNdjson(chunked(bytes, size)))).toEqual(events);
    }
  });

  it("accepts a last line without a newline and skips blank lines", async () => {
    const bytes = new TextEncoder().encode('{"a":1}\n\n{"a":2}');
    expect(await collect(parseNdjson(chunked(bytes, 3)))).toEqual([{ a: 1 }, { a: 2 }]);
  });

  it("refuses a line longer than the limit", async () => {
    const bytes = new TextEncoder().encode(`"${"x".repeat(100)}`);
    await expect(collect(parseNdjson(chunked(bytes, 10), 50))).rejects.toThrow(/exceeds 50 bytes/);
  });

  it("pulls values only as they are read, and reports a reader that leaves", async () => {
    let produced = 0;
    let cancelled = false;
    let finalised = false;
    async function* endless() {
      try {
        for (;;) {
          produced++;
          yield { n: produced };
        }
      } finally {
        finalised = true;
      }
    }
    const stream = ndjsonStream(endless(), () => {
      cancelled = true;
    });
    const reader = stream.getReader();
    await reader.read();
    await reader.read();
    expect(produced).toBeLessThanOrEqual(3);
    await reader.cancel();
    expect(cancelled).toBe(true);
    expect(finalised).toBe(true);
  });
});
