import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { AppEnv } from "../context.ts";
import { readAfter, tail } from "./feed.ts";
import { WORKSPACE_EVENTS_CHANNEL } from "./kinds.ts";
import { encodePosition, type Position } from "./position.ts";

/** Idle connections are cut by proxies and load balancers after a while; a comment keeps it open. */
const KEEP_ALIVE_MS = 15_000;
/**
 * Committed events wait for older transactions to end before they are sent (feed.ts); those are
 * short, so they are asked about again soon, and less often while one lasts.
 */
const FIRST_SETTLE_WAIT_MS = 50;
const LAST_SETTLE_WAIT_MS = 1_000;

/**
 * A workspace's events as Server-Sent Events: `ready` (its id the position the stream starts
 * from), then every event after `from` (or, without one, from now) as it settles, each with its
 * position as its SSE id. Notifications only say "look again": what is sent is read from the
 * audit log after the stream's position, so a notification missed (a replica's listening
 * connection lost) or doubled loses or repeats nothing. The stream ends when api shuts down, or
 * when reading fails; a client resumes with Last-Event-ID.
 */
export function streamEvents(c: Context<AppEnv>, workspaceId: string, from: Position | undefined): Response {
  const { database, logger, stopping } = c.var.deps;
  const response = streamSSE(c, (stream) =>
    follow(stream).catch((error: unknown) => {
      logger.error({ err: error, workspaceId }, "workspace event stream failed");
    }),
  );
  // Its connection is not reused: an idle kept-alive socket would hold up a shutdown's close().
  response.headers.set("connection", "close");
  // Tells reverse proxies (nginx) to pass each event on as it comes instead of buffering.
  response.headers.set("x-accel-buffering", "no");
  return response;

  async function follow(stream: SSEStreamingApi) {
    let dirty = true;
    let wake = () => {};
    const look = () => {
      dirty = true;
      wake();
    };
    const finish = () => wake();
    const unlisten = await database.listen(
      WORKSPACE_EVENTS_CHANNEL,
      (payload) => {
        if (payload === workspaceId) look();
      },
      // notifications may have been missed meanwhile: read again, which finds whatever they said
      look,
    );
    stopping.addEventListener("abort", finish);
    stream.onAbort(finish);
    try {
      // read after listening started, so an event committed in between is read, not missed
      let cursor = from ?? (await tail(database.db, workspaceId));
      await stream.writeSSE({
        event: "ready",
        id: encodePosition(cursor),
        data: JSON.stringify({ workspaceId }),
      });
      let settleWait = 0;
      let lastWrite = Date.now();
      while (!stream.aborted && !stopping.aborted) {
        if (dirty) {
          dirty = false;
          const batch = await readAfter(database.db, workspaceId, cursor);
          for (const { position, ...event } of batch.events) {
            await stream.writeSSE({ event: event.type, id: event.id, data: JSON.stringify(event) });
            cursor = position;
            lastWrite = Date.now();
          }
          if (batch.more) dirty = true;
          settleWait = batch.unsettled
            ? Math.min(Math.max(settleWait * 2, FIRST_SETTLE_WAIT_MS), LAST_SETTLE_WAIT_MS)
            : 0;
          continue;
        }
        const keepAliveIn = lastWrite + KEEP_ALIVE_MS - Date.now();
        const waitMs = settleWait > 0 ? Math.min(settleWait, keepAliveIn) : keepAliveIn;
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), Math.max(waitMs, 0));
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        wake = () => {};
        if (woken) continue;
        if (settleWait > 0 && waitMs === settleWait) dirty = true;
        else {
          await stream.write(": keep-alive\n\n");
          lastWrite = Date.now();
        }
      }
    } finally {
      stopping.removeEventListener("abort", finish);
      await unlisten();
    }
  }
}
