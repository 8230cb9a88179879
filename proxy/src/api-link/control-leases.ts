import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { ApiLink } from "./api-link.ts";
import { readServerSentEvents } from "./sse.ts";

export interface ActiveControlLease {
  id: string;
  workspaceId: string;
  computerId: string;
  screen: number;
  expiresAt: Date;
}

interface Events {
  /** A lease was released, revoked or expired: its sockets must close now. */
  ended: [leaseId: string];
  /** A lease's expiry moved (renewal). */
  changed: [lease: ActiveControlLease];
  /** The stream broke: nothing can be known about leases until it is back. */
  lost: [];
}

const RECONNECT_DELAYS_MS = [100, 250, 500, 1_000, 2_000];
// api sends a keep-alive every 10 s; silence past this means the stream is dead, even if TCP is not.
const SILENCE_LIMIT_MS = 25_000;

/**
 * Follows api's stream of active control leases (a snapshot, then changes) so that every proxy
 * replica closes a control socket within a second of its lease being released or expiring, without
 * polling. While the stream is down the watch is `connected: false` and control sockets fail closed.
 */
export class ControlLeaseWatch extends EventEmitter<Events> {
  private readonly leases = new Map<string, ActiveControlLease>();
  private connectedNow = false;
  private stopped = false;
  private abort: AbortController | undefined;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly link: ApiLink,
    private readonly logger: Logger,
  ) {
    super();
  }

  get connected(): boolean {
    return this.connectedNow;
  }

  start(): void {
    void this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    this.wake();
  }

  /** The lease if it is active; waits briefly for a lease granted just before its socket opened. */
  async waitFor(leaseId: string, timeoutMs: number): Promise<ActiveControlLease | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const lease = this.connectedNow ? this.leases.get(leaseId) : undefined;
      if (lease && lease.expiresAt.getTime() > Date.now()) return lease;
      const left = deadline - Date.now();
      if (left <= 0 || this.stopped) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  private wake(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
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
            "control lease stream failed",
          );
      }
      this.markLost();
      if (this.stopped) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(attempt++, RECONNECT_DELAYS_MS.length - 1)];
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private async follow(onSnapshot: () => void): Promise<void> {
    this.abort = new AbortController();
    let silence = setTimeout(() => this.abort?.abort(), SILENCE_LIMIT_MS);
    try {
      const response = await fetch(`${this.link.apiUrl}/internal/proxy/control-leases`, {
        headers: { authorization: await this.link.authorization(), accept: "text/event-stream" },
        signal: this.abort.signal,
      });
      if (response.status !== 200 || !response.body) {
        await response.body?.cancel();
        throw new Error(`api answered ${response.status} to the control lease stream`);
      }
      for await (const { event, data } of readServerSentEvents(response.body)) {
        clearTimeout(silence);
        silence = setTimeout(() => this.abort?.abort(), SILENCE_LIMIT_MS);
        this.apply(event, JSON.parse(data));
        if (event === "snapshot") onSnapshot();
      }
    } finally {
      clearTimeout(silence);
    }
  }

  private apply(event: string, data: unknown): void {
    if (event === "snapshot") {
      const { leases } = data as { leases: unknown[] };
      const next = new Map(leases.map(toLease).map((lease) => [lease.id, lease]));
      for (const id of this.leases.keys()) if (!next.has(id)) this.end(id);
      for (const [id, lease] of next) this.leases.set(id, lease);
      this.connectedNow = true;
    } else if (event === "granted" || event === "renewed") {
      const lease = toLease(data);
      this.leases.set(lease.id, lease);
      this.emit("changed", lease);
    } else if (event === "ended") {
      this.end((data as { id: string }).id);
    }
    this.wake();
  }

  private end(leaseId: string): void {
    this.leases.delete(leaseId);
    this.emit("ended", leaseId);
  }

  private markLost(): void {
    const wasConnected = this.connectedNow;
    this.connectedNow = false;
    this.leases.clear();
    if (wasConnected) this.emit("lost");
  }
}

function toLease(value: unknown): ActiveControlLease {
  const lease = value as Record<string, unknown>;
  if (
    typeof lease.id !== "string" ||
    typeof lease.workspaceId !== "string" ||
    typeof lease.computerId !== "string" ||
    typeof lease.screen !== "number" ||
    typeof lease.expiresAt !== "string"
  )
    throw new Error("api sent a malformed control lease");
  return {
    id: lease.id,
    workspaceId: lease.workspaceId,
    computerId: lease.computerId,
    screen: lease.screen,
    expiresAt: new Date(lease.expiresAt),
  };
}
