import type { Logger } from "pino";
import type { ApiLink } from "./api-link.ts";
import { readServerSentEvents } from "./sse.ts";

const RECONNECT_DELAYS_MS = [100, 250, 500, 1_000, 2_000];
// api sends a keep-alive every 10 s; silence past this means the stream is dead, even if TCP is not.
const SILENCE_LIMIT_MS = 25_000;

export interface StreamHandlers {
  /** Every event in order; the first of each connection tells what holds now (a snapshot). */
  onEvent(event: string, data: unknown): void;
  /** The stream broke or ended: what it said may be stale until the next connection's first event. */
  onLost(): void;
}

/**
 * Follows one of api's event streams (`/internal/proxy/…`), reconnecting with backoff for as long
 * as it runs. Each connection starts again from a first event, so nothing missed while the stream
 * was down stays missed.
 */
export class FollowedStream {
  private stopped = false;
  private abort: AbortController | undefined;

  constructor(
    private readonly link: ApiLink,
    private readonly path: string,
    private readonly name: string,
    private readonly logger: Logger,
    private readonly handlers: StreamHandlers,
  ) {}

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      try {
        await this.follow(() => {
          attempt = 0;
        });
      } catch (error) {
        // api starting or restarting is routine; only a stream that stays down is worth a warning
        const level = attempt >= RECONNECT_DELAYS_MS.length ? "warn" : "debug";
        if (!this.stopped)
          this.logger[level](
            { err: error instanceof Error ? error.message : String(error) },
            `${this.name} stream failed`,
          );
      }
      this.handlers.onLost();
      if (this.stopped) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(attempt++, RECONNECT_DELAYS_MS.length - 1)];
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private async follow(onFirst: () => void): Promise<void> {
    this.abort = new AbortController();
    let silence = setTimeout(() => this.abort?.abort(), SILENCE_LIMIT_MS);
    try {
      const response = await fetch(`${this.link.apiUrl}${this.path}`, {
        headers: { authorization: await this.link.authorization(), accept: "text/event-stream" },
        signal: this.abort.signal,
      });
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel();
        throw new Error(`api answered ${response.status} to the ${this.name} stream`);
      }
      let first = true;
      const heard = () => {
        clearTimeout(silence);
        silence = setTimeout(() => this.abort?.abort(), SILENCE_LIMIT_MS);
      };
      for await (const { event, data } of readServerSentEvents(response.body, heard)) {
        this.handlers.onEvent(event, JSON.parse(data));
        if (first) onFirst();
        first = false;
      }
    } finally {
      clearTimeout(silence);
    }
  }
}
