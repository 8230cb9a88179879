import { EventSourceParserStream } from "eventsource-parser/stream";
import type { Cubicle } from "./cubicle.ts";
import { errorOf } from "./problem.ts";
import type { components } from "./schema";

/**
 * A change in the workspace, as `GET /v1/workspaces/{id}/events` sends it: `type` is its audit
 * action (`session.opened`, `computer.started`…), `id` its position (pass it back as
 * `lastEventId` to resume after it).
 */
export type WorkspaceEvent = components["schemas"]["WorkspaceEvent"];

export interface WorkspaceEventsOptions {
  /** Resume after this event (every later one is sent, then live ones); from now when absent. */
  lastEventId?: string | undefined;
  /** Stops the stream (the iteration then ends). */
  signal?: AbortSignal | undefined;
  /** Called each time the stream is (re)connected and following: nothing after this is missed. */
  onReady?: () => void;
}

const FIRST_RECONNECT_MS = 250;
const LAST_RECONNECT_MS = 10_000;

/**
 * The workspace's events, in order, across reconnections: a dropped stream is opened again from
 * the last event seen, so none is lost or repeated. A refusal (no access, a bad id) is thrown.
 */
export async function* workspaceEvents(
  cubicle: Cubicle,
  workspaceId: string,
  { lastEventId, signal, onReady }: WorkspaceEventsOptions = {},
): AsyncGenerator<WorkspaceEvent> {
  let resumeFrom = lastEventId;
  let wait = FIRST_RECONNECT_MS;
  while (!signal?.aborted) {
    let response: Response;
    try {
      response = await cubicle.send(
        new Request(`${cubicle.url}/v1/workspaces/${encodeURIComponent(workspaceId)}/events`, {
          headers: { accept: "text/event-stream", ...(resumeFrom ? { "last-event-id": resumeFrom } : {}) },
          ...(signal ? { signal } : {}),
        }),
      );
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
    if (!response.ok) {
      if (response.status < 500) throw await errorOf(response);
      await response.body?.cancel();
    } else if (response.body) {
      const messages = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream());
      try {
        for await (const message of messages as unknown as AsyncIterable<{
          event?: string;
          id?: string;
          data: string;
        }>) {
          if (message.event === "ready") {
            // where the stream starts: a reconnection before any event resumes from here, not from a later now
            if (message.id) resumeFrom = message.id;
            wait = FIRST_RECONNECT_MS;
            onReady?.();
            continue;
          }
          const event = JSON.parse(message.data) as WorkspaceEvent;
          resumeFrom = message.id ?? event.id;
          yield event;
        }
      } catch (error) {
        if (signal?.aborted) return;
        if (error instanceof SyntaxError) throw error;
        // the connection dropped mid-stream: open it again from the last event seen
      }
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, LAST_RECONNECT_MS);
  }
}
