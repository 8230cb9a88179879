import { expect } from "vitest";
import type { TestClient } from "./harness.ts";
import { EventStreamReader } from "./sse.ts";

export interface EventFollower {
  reader: EventStreamReader;
  /** The SSE id of `ready`: where the stream started. */
  readyId: string;
  /** Every event after `ready`, as sent: its SSE id, name and parsed data. */
  // biome-ignore lint/suspicious/noExplicitAny: tests assert on whatever JSON came.
  events(): { id: string | undefined; type: string; data: any }[];
  /** Waits until an event of `type` (matching `matches`) has come, and returns it. */
  // biome-ignore lint/suspicious/noExplicitAny: tests assert on whatever JSON came.
  until(type: string, matches?: (data: any) => boolean, timeoutMs?: number): Promise<any>;
  close(): Promise<void>;
}

/** Follows a workspace's events as `who`, resuming after `lastEventId` (a header) if given. */
export async function followEvents(
  who: TestClient,
  workspaceId: string,
  options: { lastEventId?: string; query?: string } = {},
): Promise<EventFollower> {
  const abort = new AbortController();
  const response = await who.fetch(
    "GET",
    `/v1/workspaces/${workspaceId}/events${options.query ? `?${options.query}` : ""}`,
    {
      signal: abort.signal,
      headers: options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId },
    },
  );
  expect(response.status, response.status === 200 ? "" : await response.text()).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
  if (!response.body) throw new Error("no stream body");
  const reader = new EventStreamReader(response.body);
  const ready = await reader.next("ready");
  expect(ready).toEqual({ workspaceId });
  const readyId = reader.events[0]?.id;
  if (readyId === undefined) throw new Error("ready came without an id");
  return {
    reader,
    readyId,
    events: () =>
      reader.events
        .slice(1)
        .map((event) => ({ id: event.id, type: event.event, data: JSON.parse(event.data) })),
    until: (type, matches, timeoutMs = 10_000) => reader.next(type, matches, timeoutMs),
    close: async () => {
      abort.abort();
      await reader.ended;
    },
  };
}

/** Positions `<epoch>-<xact>-<id>` as numbers to compare: strictly increasing along a stream. */
export function expectIncreasing(ids: (string | undefined)[]): void {
  const positions = ids.map((id) => {
    const match = /^(\d+)-(\d+)-(\d+)$/.exec(id ?? "");
    if (!match) throw new Error(`not a position: ${id}`);
    return match.slice(1).map((part) => BigInt(part));
  });
  const before = (a: bigint[], b: bigint[]): boolean => {
    const i = a.findIndex((part, at) => part !== b[at]);
    return i !== -1 && (a[i] as bigint) < (b[i] as bigint);
  };
  for (let i = 1; i < positions.length; i++) {
    const [a, b] = [positions[i - 1], positions[i]] as [bigint[], bigint[]];
    expect(before(a, b), `${ids[i - 1]} before ${ids[i]}`).toBe(true);
  }
}
