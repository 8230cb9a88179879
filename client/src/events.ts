import { EventSourceParserStream } from "eventsource-parser/stream";
import type { Cubicle } from "./cubicle.ts";
import { errorOf } from "./problem.ts";
import type { components } from "./schema";
import { chunksOf, pause } from "./streams.ts";

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
 * The workspace's events, in order, across reconnections: a dropped stream, or an api away for a
 * while (a restart, a deploy), is followed again from the last event seen, so none is lost or
 * repeated, until `signal` aborts. A refusal (no access, a bad id) is thrown, as is a failure to
 * reach the api before the stream first followed (a wrong url is not worth waiting on).
 */
export async function* workspaceEvents(
  cubicle: Cubicle,
  workspaceId: string,
  { lastEventId, signal, onReady }: WorkspaceEventsOptions = {},
): AsyncGenerator<WorkspaceEvent> {
  let resumeFrom = lastEventId;
  let followed = false;
  let wait = FIRST_RECONNECT_MS;
  while (!signal?.aborted) {
    let response: Response | undefined;
    try {
      response = await cubicle.send(
        new Request(`${cubicle.url}/v1/workspaces/${encodeURIComponent(workspaceId)}/events`, {
          headers: { accept: "text/event-stream", ...(resumeFrom ? { "last-event-id": resumeFrom } : {}) },
          ...(signal ? { signal } : {}),
        }),
      );
    } catch (error) {
      if (signal?.aborted) return;
      if (!followed) throw error;
    }
    if (response && !response.ok) {
      if (response.status < 500) throw await errorOf(response);
      await response.body?.cancel();
    } else if (response?.body) {
      const messages = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream());
      try {
        for await (const message of chunksOf(messages)) {
          if (message.event === "ready") {
            // where the stream starts: a reconnection before any event resumes from here, not from a later now
            if (message.id) resumeFrom = message.id;
            followed = true;
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
    await pause(wait, signal);
    wait = Math.min(wait * 2, LAST_RECONNECT_MS);
  }
}
