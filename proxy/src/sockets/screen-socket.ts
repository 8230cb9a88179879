import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { createWebSocketStream, WebSocket } from "ws";
import type { ActiveControlLease } from "../api-link/control-leases.ts";
import type { ScreenMode, VerifiedCapability } from "../capability/index.ts";
import type { ProxyMetrics } from "../metrics.ts";
import type { RecordingEnd } from "../recording/format.ts";
import type { Recorder } from "../recording/recorder.ts";
import { viewScreen } from "../recording/screen-viewer.ts";
import { bridgeRfb, type RfbBridgeEnd, type RfbBridgeOptions } from "../rfb/index.ts";
import { type ConnectedTarget, connectTarget } from "./targets.ts";

/** Close codes a browser sees; reasons are generic on purpose. */
export const CLOSE = {
  targetClosed: { code: 1000, reason: "screen closed" },
  violation: { code: 1008, reason: "protocol violation" },
  tooLarge: { code: 1008, reason: "message too large" },
  unavailable: { code: 1011, reason: "screen unavailable" },
  controlEnded: { code: 4001, reason: "control ended" },
  idle: { code: 4002, reason: "idle" },
  controlUnverifiable: { code: 4003, reason: "control cannot be verified" },
  accessRevoked: { code: 4004, reason: "access revoked" },
  accessUnverifiable: { code: 4005, reason: "access cannot be verified" },
  shuttingDown: { code: 1001, reason: "proxy shutting down" },
} as const;
export type CloseKind = keyof typeof CLOSE;

/**
 * The server's sockets. ws answers a frame over its maxPayload by closing with 1009 itself, before
 * anything of ours hears of it; an oversized message is a violation like any other, closed with the
 * documented 1008 and a reason whichever way it came (one big frame or many small ones).
 */
export class ScreenWebSocket extends WebSocket {
  override close(code?: number, reason?: string | Buffer): void {
    if (code === 1009) super.close(CLOSE.tooLarge.code, CLOSE.tooLarge.reason);
    else super.close(code, reason);
  }
}

/** How the browser hears why its bridge ended. */
function closeKindOf(end: RfbBridgeEnd): CloseKind {
  if (end.reason === "target-closed") return "targetClosed";
  if (end.reason === "protocol-violation") return "violation";
  if (end.reason === "message-too-large") return "tooLarge";
  return "unavailable";
}

const UNREACHED: RecordingEnd = { complete: false, reason: "the screen could not be reached" };

/**
 * A socket's recording covers its whole life, however it closed. api's recorder socket records a
 * session's screen until api closes it or the screen goes: anything else cut the recording short.
 */
function recordingEnd(mode: ScreenMode, closedWith: CloseKind | undefined): RecordingEnd {
  if (mode !== "record" || closedWith === undefined || closedWith === "targetClosed")
    return { complete: true };
  return {
    complete: false,
    reason:
      closedWith === "shuttingDown"
        ? "the proxy shut down"
        : `the recording ended: ${CLOSE[closedWith].reason}`,
  };
}

// A peer that ignores our close frame is cut off; revocation must not wait for its cooperation.
const CLOSE_GRACE_MS = 500;
/**
 * The api stops a control server as soon as its lease ends, so a control socket's screen may drop
 * just before the lease's end reaches this proxy (under load, it did). The browser is told that
 * control ended when the lease's end arrives within this long, and that the screen closed otherwise.
 */
const LEASE_END_GRACE_MS = 2_000;
const PING_INTERVAL_MS = 20_000;

export interface ScreenSocketOptions {
  socket: WebSocket;
  capability: VerifiedCapability;
  /** The page's origin, as the browser sent it; undefined for a program. */
  origin: string | undefined;
  /** Whether it asked for the proxy's status in text frames (SCREEN_STATUS_PROTOCOL). */
  statusFrames: boolean;
  /** Present for control sockets: the lease they live under, as last seen. */
  lease: ActiveControlLease | undefined;
  idleTimeoutMs: number;
  maxFrameBytes: number;
  /** Present when the capability names a recording: takes what the socket's bridge relays. */
  recorder: Recorder | undefined;
  metrics: ProxyMetrics;
  logger: Logger;
}

/** One open screen socket: its bridge, its timers, and the one way to end it. */
export class ScreenSocket {
  private readonly abort = new AbortController();
  private lastActivity = Date.now();
  private expiryTimer: NodeJS.Timeout | undefined;
  private closedWith: CloseKind | undefined;
  private markClosing: () => void = () => undefined;
  /** Resolves once close() has run. */
  private readonly closing = new Promise<void>((resolve) => {
    this.markClosing = resolve;
  });
  private target: Duplex | undefined;
  private controlledShown: boolean | undefined;
  readonly ended: Promise<void>;

  constructor(private readonly options: ScreenSocketOptions) {
    if (options.lease) this.followLease(options.lease);
    // ws has already sent its close frame for a frame it refused; this gives the browser the grace
    // to answer it rather than the cut a socket gone from under the bridge gets
    options.socket.once("error", (error: Error & { code?: string }) =>
      this.close(error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" ? "tooLarge" : "violation"),
    );
    this.ended = this.run();
  }

  get capability(): VerifiedCapability {
    return this.options.capability;
  }

  get origin(): string | undefined {
    return this.options.origin;
  }

  /** Tells a viewer that asked for status whether someone controls its screen, when that changed. */
  showControlled(controlled: boolean): void {
    if (this.options.capability.mode !== "view" || controlled === this.controlledShown) return;
    this.controlledShown = controlled;
    this.sendStatus({ type: "controlled", controlled });
  }

  /** A text frame beside the RFB binary ones, for a client that asked for them; nothing for others. */
  private sendStatus(status: { type: string } & Record<string, unknown>): void {
    const { socket, statusFrames } = this.options;
    if (statusFrames && !this.closedWith && socket.readyState === WebSocket.OPEN)
      socket.send(JSON.stringify(status));
  }

  /** Resolves once the socket's recording, if any, reached api or was given up on. */
  get recordingSettled(): Promise<void> {
    return this.options.recorder?.settled ?? Promise.resolve();
  }

  /** The lease moved (renewed); the socket now ends at its new expiry. */
  followLease(lease: ActiveControlLease): void {
    this.sendStatus({ type: "lease", expiresAt: lease.expiresAt.toISOString() });
    clearTimeout(this.expiryTimer);
    const left = lease.expiresAt.getTime() - Date.now();
    this.expiryTimer = setTimeout(() => this.close("controlEnded"), Math.max(0, left));
  }

  /**
   * Sends the close frame first (the bridge's abort would terminate the socket without one), then
   * cuts the screen side at once so no more input reaches it, then ends the relay.
   */
  close(kind: CloseKind): void {
    if (this.closedWith) return;
    this.closedWith = kind;
    this.markClosing();
    const { socket } = this.options;
    const { code, reason } = CLOSE[kind];
    socket.close(code, reason);
    this.target?.destroy();
    setTimeout(() => {
      this.abort.abort();
      socket.terminate();
    }, CLOSE_GRACE_MS).unref();
  }

  private async run(): Promise<void> {
    const { socket, capability, metrics, logger } = this.options;
    const mode = capability.mode;
    metrics.openSockets.inc({ mode });
    const timers = this.startTimers();
    try {
      let connected: ConnectedTarget;
      try {
        connected = await connectTarget(capability.target);
      } catch {
        this.close("unavailable");
        return;
      }
      const target = connected.stream;
      if (this.closedWith) {
        target.destroy();
        return;
      }
      this.target = target;
      const { recorder } = this.options;
      const relay: Omit<RfbBridgeOptions, "browser" | "mode"> = {
        target,
        ...(connected.recycle ? { recycleTargetChunk: connected.recycle } : {}),
        password: capability.target.password,
        maxClientMessageBytes: this.options.maxFrameBytes,
        signal: this.abort.signal,
        onClientBytes: (n) => {
          this.lastActivity = Date.now();
          metrics.bytes.inc({ direction: "to_screen" }, n);
        },
        onServerBytes: (n) => {
          this.lastActivity = Date.now();
          metrics.bytes.inc({ direction: "to_browser" }, n);
        },
        onDropped: () => metrics.droppedInput.inc(),
        // with a close frame saying why (an abort comes from close(), which already sent one)
        closeBrowser: (ending) => {
          const kind = closeKindOf(ending);
          if (kind !== "targetClosed" || !this.options.lease) return this.close(kind);
          // the lease's end, if it comes meanwhile, closes first (close() runs once)
          setTimeout(() => this.close(kind), LEASE_END_GRACE_MS).unref();
        },
        ...(recorder
          ? {
              onServerData: (data) => recorder.server(data),
              onClientMessage: (message) => recorder.client(message),
            }
          : {}),
      };
      let end: RfbBridgeEnd;
      if (mode === "record") {
        // api's recorder: the proxy views the screen itself; api's socket gets nothing, and its
        // closing ends the recording
        const viewer = viewScreen(relay);
        if (socket.readyState === WebSocket.CLOSED) viewer.stop();
        else socket.once("close", () => viewer.stop());
        end = await viewer.ended;
      } else {
        end = await bridgeRfb({
          ...relay,
          // room for a few screen updates in flight: the 16 KiB default stalls the relay on every chunk
          browser: createWebSocketStream(socket, { writableHighWaterMark: 256 * 1024 }),
          mode,
        });
      }
      // a screen that went away is reported once what it sent has reached the browser
      if (end.reason === "target-closed") await this.closing;
      logger.info(
        {
          subject: capability.subject,
          computer: capability.computerId,
          screen: capability.screen,
          mode,
          ...(capability.recordingId === undefined ? {} : { recording: capability.recordingId }),
          end: end.reason,
        },
        "screen socket ended",
      );
    } finally {
      const { recorder } = this.options;
      // a recording that never got the screen's stream shows nothing, whatever ended it
      void recorder?.end(recorder.screenShown ? recordingEnd(mode, this.closedWith) : UNREACHED);
      for (const timer of timers) clearInterval(timer);
      clearTimeout(this.expiryTimer);
      metrics.openSockets.dec({ mode });
      metrics.closes.inc({ reason: this.closedWith ?? "browserClosed" });
      if (!this.closedWith) socket.terminate();
    }
  }

  private startTimers(): NodeJS.Timeout[] {
    const { socket, idleTimeoutMs, capability } = this.options;
    let alive = true;
    socket.on("pong", () => {
      alive = true;
    });
    const ping = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, PING_INTERVAL_MS);
    // api's recorder lives as long as its session, however still the screen: api closes it
    if (capability.mode === "record") return [ping];
    const idle = setInterval(
      () => {
        if (Date.now() - this.lastActivity >= idleTimeoutMs) this.close("idle");
      },
      Math.min(idleTimeoutMs / 4, 10_000),
    );
    return [ping, idle];
  }
}
