import type { Context } from "hono";
import type { SSEMessage } from "hono/streaming";
import type { AppEnv } from "../context.ts";
import { streamChannel } from "../http/channel-stream.ts";

// The proxy treats 25 s of silence as a dead stream.
const KEEP_ALIVE_MS = 10_000;

export interface NotificationStream {
  /** The Postgres channel followed. */
  channel: string;
  /** For logs: what the stream carries. */
  name: string;
  /** The first event: what holds now (read after listening started, so no change falls between). */
  first(): Promise<SSEMessage>;
  /** The event a notification's payload becomes; throws on a malformed one, which is logged and skipped. */
  toMessage(payload: string): SSEMessage;
}

/**
 * Streams a LISTEN/NOTIFY channel to a proxy replica as Server-Sent Events: `first`, then one
 * event per notification as it commits, and keep-alive comments in between. The stream ends when
 * api shuts down, or when the database connection it listens on was lost and re-established
 * (notifications may have been missed meanwhile), so the proxy reconnects and starts again from
 * a fresh first event. A notification that `first` already reflects is sent again, which a proxy
 * applies idempotently.
 */
export function streamNotifications(c: Context<AppEnv>, spec: NotificationStream): Response {
  const { logger } = c.var.deps;
  const pending: SSEMessage[] = [];
  let stale = false;
  return streamChannel(c, {
    channel: spec.channel,
    keepAliveMs: KEEP_ALIVE_MS,
    failure: { message: `${spec.name} stream failed` },
    heard(payload) {
      try {
        pending.push(spec.toMessage(payload));
      } catch (error) {
        logger.error({ err: error }, `malformed ${spec.name} notification`);
      }
    },
    missed() {
      stale = true;
    },
    start: async (send) => send(await spec.first()),
    // one message a turn, then at once the next: the loop checks for the end between them
    async turn(send) {
      if (stale) return "end";
      const message = pending.shift();
      if (!message) return undefined;
      await send(message);
      return 0;
    },
  });
}
