import { describe, expect, it } from "vitest";
import { readServerSentEvents, type ServerSentEvent } from "./sse.ts";

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect(chunks: string[]): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(streamOf(chunks))) events.push(event);
  return events;
}

describe("server-sent events", () => {
  it("reads events split anywhere, skipping comments, joining data lines", async () => {
    const text =
      'event: snapshot\ndata: {"leases":[]}\n\n: keep-alive\n\nevent: ended\r\ndata: a\r\ndata: b\r\n\r\ndata:plain\n\n';
    const expected = [
      { event: "snapshot", data: '{"leases":[]}' },
      { event: "ended", data: "a\nb" },
      { event: "message", data: "plain" },
    ];
    expect(await collect([text])).toEqual(expected);
    expect(await collect(text.split(""))).toEqual(expected);
  });

  it("tells of every line heard, keep-alive comments too, so a quiet stream is known to be alive", async () => {
    let heard = 0;
    const events: ServerSentEvent[] = [];
    const body = streamOf([": keep-alive\n\n", ": keep-alive\n", "\nevent: ended\ndata: x\n\n"]);
    for await (const event of readServerSentEvents(body, () => heard++)) events.push(event);
    expect(events).toEqual([{ event: "ended", data: "x" }]);
    // two comments, their two blank lines, and the event's three lines
    expect(heard).toBe(7);
  });

  it("drops an event cut off by the end of the stream", async () => {
    expect(await collect(["event: granted\ndata: {}"])).toEqual([]);
  });
});
