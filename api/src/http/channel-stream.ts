import type { Context } from "hono";
import { type SSEMessage, type SSEStreamingApi, streamSSE } from "hono/streaming";
import type { AppEnv } from "../context.ts";

export type Send = (message: SSEMessage) => Promise<void>;

/** What a stream following a channel does; the loop around it is `streamChannel`'s. */
export interface ChannelStream {
  /** The Postgres channel listened on. */
  channel: string;
  /** Idle time after which a `: keep-alive` comment is written, so proxies keep the connection. */
  keepAliveMs: number;
  /** Logged as an error with what failed, if the stream fails. */
  failure: { message: string; context?: Record<string, unknown> };
  /** A notification on the channel (the next `turn` comes at once). */
  heard(payload: string): void;
  /**
   * The listening connection was lost and listens again: notifications sent meanwhile are gone
   * (the next `turn` comes at once).
   */
  missed(): void;
  /** Sends the first event(s), once listening has started: no change falls in between. */
  start(send: Send): Promise<void>;
  /**
   * Sends what there is to send. Says when to be asked again if nothing is heard first (in ms;
   * 0 or less: at once; undefined: not until something is heard), or `"end"` to end the stream.
   */
  turn(send: Send): Promise<number | undefined | "end">;
}

/**
 * Server-Sent Events that follow a LISTEN/NOTIFY channel: listens, then `start`, then a `turn`
 * whenever something was heard or was missed (or when the last turn asked), with keep-alive
 * comments while nothing is written. The stream ends when api shuts down (`stopping`), when the
 * client goes, when a turn says so, or when writing or a turn fails (logged).
 */
export function streamChannel(c: Context<AppEnv>, spec: ChannelStream): Response {
  const { database, logger, stopping } = c.var.deps;
  const response = streamSSE(c, (stream) =>
    follow(stream).catch((error: unknown) => {
      logger.error({ err: error, ...spec.failure.context }, spec.failure.message);
    }),
  );
  // Its connection is not reused: an idle kept-alive socket would hold up a shutdown's close().
  response.headers.set("connection", "close");
  // Tells reverse proxies (nginx) to pass each event on as it comes instead of buffering.
  response.headers.set("x-accel-buffering", "no");
  return response;

  async function follow(stream: SSEStreamingApi) {
    /** Something happened since the last turn began: a notification, a gap, the end. */
    let woken = false;
    let wake = () => {};
    const rouse = () => {
      woken = true;
      wake();
    };
    const unlisten = await database.listen(
      spec.channel,
      (payload) => {
        spec.heard(payload);
        rouse();
      },
      () => {
        spec.missed();
        rouse();
      },
    );
    stopping.addEventListener("abort", rouse);
    stream.onAbort(rouse);
    let lastWrite = Date.now();
    const send: Send = async (message) => {
      await stream.writeSSE(message);
      lastWrite = Date.now();
    };
    try {
      await spec.start(send);
      while (!stream.aborted && !stopping.aborted) {
        woken = false;
        const again = await spec.turn(send);
        if (again === "end") break;
        if (woken || (again !== undefined && again <= 0)) continue;
        const keepAliveIn = lastWrite + spec.keepAliveMs - Date.now();
        const waitMs = Math.max(again === undefined ? keepAliveIn : Math.min(again, keepAliveIn), 0);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = () => {};
        if (!woken && Date.now() >= lastWrite + spec.keepAliveMs) {
          await stream.write(": keep-alive\n\n");
          lastWrite = Date.now();
        }
      }
    } finally {
      stopping.removeEventListener("abort", rouse);
      await unlisten();
    }
  }
}
