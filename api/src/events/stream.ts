import type { Context } from "hono";
import type { AppEnv } from "../context.ts";
import { streamChannel } from "../http/channel-stream.ts";
import { readAfter, tail } from "./feed.ts";
import { WORKSPACE_EVENTS_CHANNEL } from "./kinds.ts";
import { encodePosition, type Position } from "./position.ts";
import { StallWatch } from "./stall.ts";

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
  const { database, logger } = c.var.deps;
  let cursor: Position;
  /** Something may have been recorded after the cursor: read again. */
  let dirty = true;
  /** Events are waiting to settle: read again then, and wait twice as long the next time. */
  let settleAt: number | undefined;
  let settleWait = 0;
  const stall = new StallWatch();
  return streamChannel(c, {
    channel: WORKSPACE_EVENTS_CHANNEL,
    keepAliveMs: KEEP_ALIVE_MS,
    failure: { message: "workspace event stream failed", context: { workspaceId } },
    heard(payload) {
      if (payload === workspaceId) dirty = true;
    },
    // notifications may have been missed meanwhile: read again, which finds whatever they said
    missed() {
      dirty = true;
    },
    async start(send) {
      // read after listening started, so an event committed in between is read, not missed
      cursor = from ?? (await tail(database.db, workspaceId));
      await send({ event: "ready", id: encodePosition(cursor), data: JSON.stringify({ workspaceId }) });
    },
    async turn(send) {
      if (!dirty && (settleAt === undefined || Date.now() < settleAt))
        return settleAt === undefined ? undefined : settleAt - Date.now();
      dirty = false;
      const batch = await readAfter(database.db, workspaceId, cursor);
      for (const { position, ...event } of batch.events) {
        await send({ event: event.type, id: event.id, data: JSON.stringify(event) });
        cursor = position;
      }
      const waitedMs = stall.check(batch.waiting?.horizon);
      if (waitedMs !== undefined)
        logger.warn(
          {
            workspaceId,
            waitedMs,
            waitingEvent: batch.waiting?.position,
            oldestRunningXact: batch.waiting?.horizon,
          },
          "live events are held back: a transaction has been open for long on the Postgres server " +
            "(events wait until every older transaction on the whole server ends; find it in " +
            "pg_stat_activity by backend_xid, and set idle_in_transaction_session_timeout)",
        );
      if (batch.more) {
        dirty = true;
        return 0;
      }
      settleWait = batch.unsettled
        ? Math.min(Math.max(settleWait * 2, FIRST_SETTLE_WAIT_MS), LAST_SETTLE_WAIT_MS)
        : 0;
      settleAt = batch.unsettled ? Date.now() + settleWait : undefined;
      return batch.unsettled ? settleWait : undefined;
    },
  });
}
