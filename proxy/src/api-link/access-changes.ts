import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { ApiLink } from "./api-link.ts";
import { FollowedStream } from "./event-stream.ts";

interface Events {
  /** Access in this workspace may have been taken away: its sockets must be checked again. */
  changed: [workspaceId: string];
  /** Following (again): changes may have gone unheard before, so every socket must be checked. */
  ready: [];
  /** The stream broke: access taken away now would go unheard until it is back. */
  lost: [];
}

/**
 * Follows api's stream of access changes (`ready`, then `changed` per workspace), which the
 * database announces whenever a member is removed or changes role, a key is revoked or deleted,
 * or an account or workspace is deleted. The stream says only where to look; api's access check
 * says which sockets may stay.
 */
export class AccessChangeWatch extends EventEmitter<Events> {
  private connectedNow = false;
  private readonly stream: FollowedStream;

  constructor(link: ApiLink, logger: Logger) {
    super();
    this.stream = new FollowedStream(link, "/internal/proxy/access-changes", "access change", logger, {
      onEvent: (event, data) => this.apply(event, data),
      onLost: () => {
        const wasConnected = this.connectedNow;
        this.connectedNow = false;
        if (wasConnected) this.emit("lost");
      },
    });
  }

  get connected(): boolean {
    return this.connectedNow;
  }

  start(): void {
    this.stream.start();
  }

  stop(): void {
    this.stream.stop();
  }

  /** True once following; waits up to `timeoutMs` for a stream that is (re)connecting. */
  whenConnected(timeoutMs: number): Promise<boolean> {
    if (this.connectedNow) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.off("ready", done);
        resolve(this.connectedNow);
      };
      const timer = setTimeout(done, timeoutMs);
      this.on("ready", done);
    });
  }

  private apply(event: string, data: unknown): void {
    if (event === "ready") {
      this.connectedNow = true;
      this.emit("ready");
    } else if (event === "changed") {
      const { workspaceId } = data as { workspaceId?: unknown };
      if (typeof workspaceId !== "string") throw new Error("api sent a malformed access change");
      this.emit("changed", workspaceId);
    }
  }
}
