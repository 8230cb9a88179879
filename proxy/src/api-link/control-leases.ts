import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { ApiLink } from "./api-link.ts";
import { FollowedStream } from "./event-stream.ts";

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
  /** Leases were granted, ended or heard of anew: which screens are controlled may have changed. */
  screens: [];
}

/**
 * Follows api's stream of active control leases (a snapshot, then changes) so that every proxy
 * replica closes a control socket within a second of its lease being released or expiring, without
 * polling. While the stream is down the watch is `connected: false` and control sockets fail closed.
 */
export class ControlLeaseWatch extends EventEmitter<Events> {
  private readonly leases = new Map<string, ActiveControlLease>();
  private connectedNow = false;
  private stopped = false;
  private readonly waiters = new Set<() => void>();
  private readonly stream: FollowedStream;

  constructor(link: ApiLink, logger: Logger) {
    super();
    this.stream = new FollowedStream(link, "/internal/proxy/control-leases", "control lease", logger, {
      onEvent: (event, data) => this.apply(event, data),
      onLost: () => this.markLost(),
    });
  }

  get connected(): boolean {
    return this.connectedNow;
  }

  start(): void {
    this.stream.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stream.stop();
    this.wake();
  }

  /** Whether someone holds a live control lease of this screen, as far as the stream has told. */
  controls(computerId: string, screen: number): boolean {
    const now = Date.now();
    for (const lease of this.leases.values())
      if (lease.computerId === computerId && lease.screen === screen && lease.expiresAt.getTime() > now)
        return true;
    return false;
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
    this.emit("screens");
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
