import type { Context } from "hono";
import { type SSEMessage, type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { AppEnv } from "../context.ts";

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
  const { database, logger, stopping } = c.var.deps;
  const response = streamSSE(c, (stream) =>
    follow(stream).catch((error: unknown) => {
      logger.error({ err: error }, `${spec.name} stream failed`);
    }),
  );
  // Its connection is not reused: an idle kept-alive socket would hold up a shutdown's close().
  response.headers.set("connection", "close");
  return response;

  async function follow(stream: SSEStreamingApi) {
    const pending: SSEMessage[] = [];
    let wake = () => {};
    let stale = false;
    const finish = () => wake();
    const unlisten = await database.listen(
      spec.channel,
      (payload) => {
        try {
          pending.push(spec.toMessage(payload));
        } catch (error) {
          logger.error({ err: error }, `malformed ${spec.name} notification`);
        }
        wake();
      },
      () => {
        stale = true;
        wake();
      },
    );
    stopping.addEventListener("abort", finish);
    stream.onAbort(finish);
    try {
      await stream.writeSSE(await spec.first());
      while (!stream.aborted && !stopping.aborted && !stale) {
        const message = pending.shift();
        if (message) {
          await stream.writeSSE(message);
          continue;
        }
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), KEEP_ALIVE_MS);
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        if (!woken) await stream.write(": keep-alive\n\n");
      }
    } finally {
      stopping.removeEventListener("abort", finish);
      await unlisten();
    }
  }
}
