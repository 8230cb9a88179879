/**
 * Joins a browser's RFB session to a VNC server. The proxy authenticates to the server itself, lets the
 * browser in with security type None (its capability already vouched for it) and frames the browser's
 * messages so that a `view` session cannot send input. The server's output goes to a `control`
 * session untouched; for a `view` session it is framed too, to withhold the clipboard.
 *
 *   browser ──(RFB, None)── bridge ──(RFB, VNC Authentication)── target
 */
import type { Duplex } from "node:stream";
import { ByteReader } from "./byte-reader.ts";
import { ClientMessageFilter, eachClientMessage } from "./client-messages.ts";
import { HandshakeFailure, handshakeBrowser, handshakeTarget, readServerInit } from "./handshake.ts";
import { pixelSizes, ServerMessageFilter } from "./server-messages.ts";

export type RfbBridgeEndReason =
  | "browser-closed"
  | "target-closed"
  | "protocol-violation"
  | "target-auth-failed"
  | "handshake-failed"
  | "aborted"
  | "message-too-large"
  /** A `view` session's server sent what the proxy cannot frame. */
  | "target-violation";

export interface RfbBridgeEnd {
  reason: RfbBridgeEndReason;
  detail?: string;
}

export interface RfbBridgeOptions {
  /** Speaks RFB as a client (noVNC), already authorised by a capability. */
  browser: Duplex;
  /** A VNC server offering VNC Authentication (2) or None (1). */
  target: Duplex;
  /**
   * Set when the target's chunks are lent (its reads land in recycled buffers): the bridge hands
   * each back once every byte it forwarded from it has been written to the browser.
   */
  recycleTargetChunk?(chunk: Buffer): void;
  /** The target's VNC password; undefined means the target must offer None. Never sent to the browser. */
  password: string | undefined;
  mode: "view" | "control";
  /** A client message larger than this (ClientCutText, say) ends the bridge with `message-too-large`. */
  maxClientMessageBytes: number;
  /** Both handshakes together must finish within this time; default 10 s. */
  handshakeTimeoutMs?: number;
  /** Bytes of the browser's stream written to the target (ClientInit and forwarded messages). */
  onClientBytes?(n: number): void;
  /** Bytes of the target's stream written to the browser (ServerInit and everything after it). */
  onServerBytes?(n: number): void;
  /**
   * Each piece of the target's stream as it is written to the browser, ServerInit first (a
   * recording's SERVER bytes). The buffer may be a lent chunk (`recycleTargetChunk`): whoever keeps
   * its bytes past the call copies them.
   */
  onServerData?(data: Buffer): void;
  /** Each whole client message as it is written to the target, after the mode's filtering. */
  onClientMessage?(message: Buffer): void;
  /**
   * `view` mode: the framebuffer's size, from ServerInit and then from each DesktopSize or
   * ExtendedDesktopSize rectangle the target sends (what a viewer asks its updates for).
   */
  onDesktopSize?(width: number, height: number): void;
  /** An input message the browser sent in `view` mode, dropped. */
  onDropped?(messageType: number): void;
  /** Aborting closes both sides. */
  signal?: AbortSignal;
  /**
   * Closes the browser's side when the bridge ends for any reason but the browser leaving: when the
   * target went away, once what it sent has been written to the browser (or after a grace period);
   * otherwise at once. By default the stream is ended or destroyed. An owner that can tell the
   * browser why, a WebSocket with its close code, does it here: ending or destroying the stream
   * would close the socket without a code, or cut it without a close frame.
   */
  closeBrowser?(end: RfbBridgeEnd): void;
}

type WriteCallback = (error?: Error | null) => void;

export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** How long a side whose peer went away gets to flush what it was already sent before it is destroyed. */
const CLOSE_GRACE_MS = 1_000;

/** Resolves once the bridge has ended and both streams are closed or closing; never rejects. */
export function bridgeRfb(options: RfbBridgeOptions): Promise<RfbBridgeEnd> {
  return new Promise((resolve) => new Bridge(options, resolve).start());
}

class Bridge {
  readonly #options: RfbBridgeOptions;
  readonly #resolve: (end: RfbBridgeEnd) => void;
  #ended = false;
  #relaying = false;
  #handshakeTimer: NodeJS.Timeout | undefined;
  #readers: ByteReader[] = [];
  /** Sources paused until the other side drains. */
  readonly #throttled = new Set<Duplex>();
  readonly #filter: ClientMessageFilter;
  /** `view` mode only: made from ServerInit's pixel format. */
  #serverFilter: ServerMessageFilter | undefined;
  /** Writes to the browser its stream has not yet passed on, and who waits for there to be none. */
  #browserWritesPending = 0;
  #onBrowserWritten: (() => void) | undefined;

  constructor(options: RfbBridgeOptions, resolve: (end: RfbBridgeEnd) => void) {
    this.#options = options;
    this.#resolve = resolve;
    this.#filter = new ClientMessageFilter({
      mode: options.mode,
      maxMessageBytes: options.maxClientMessageBytes,
      onPixelFormat: (sizes) => this.#serverFilter?.usePixelSizes(sizes),
    });
  }

  start(): void {
    const { browser, target, signal } = this.#options;
    // Attached for the bridge's whole life: besides ending it, they keep a late 'error' from going unhandled.
    this.#watch(browser, "browser-closed");
    this.#watch(target, "target-closed");
    if (signal?.aborted) {
      this.#finish("aborted");
      return;
    }
    signal?.addEventListener("abort", this.#onAbort, { once: true });

    const timeout = this.#options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.#handshakeTimer = setTimeout(() => this.#finish("handshake-failed", "handshake timed out"), timeout);
    this.#handshake().catch((error: unknown) => {
      if (error instanceof HandshakeFailure) this.#finish(error.reason, error.message);
      else this.#finish("handshake-failed", error instanceof Error ? error.message : String(error));
    });
  }

  async #handshake(): Promise<void> {
    const { browser, target, password } = this.#options;
    const fromTarget = new ByteReader(target);
    const fromBrowser = new ByteReader(browser);
    this.#readers = [fromTarget, fromBrowser];

    // The target first: a browser is only let in once there is a desktop to show it.
    await handshakeTarget(fromTarget, target, password);
    await handshakeBrowser(fromBrowser, browser);
    // Always ask for a shared session: a browser must not be able to disconnect the desktop's other viewers.
    target.write(Buffer.from([1]));
    this.#options.onClientBytes?.(1);
    const serverInit = await readServerInit(fromTarget);
    if (this.#ended) return;
    clearTimeout(this.#handshakeTimer);
    if (this.#options.mode === "view") {
      const sizes = pixelSizes(serverInit.subarray(4, 20));
      if (!sizes) throw new HandshakeFailure("handshake-failed", "target sent an invalid pixel format");
      this.#serverFilter = new ServerMessageFilter(sizes, this.#options.onDesktopSize);
    }

    this.#readers = [];
    this.#relaying = true;
    const earlyFromTarget = fromTarget.release();
    const earlyFromBrowser = fromBrowser.release();
    target.on("data", this.#onTargetData);
    browser.on("data", this.#onBrowserData);
    this.#toBrowser(serverInit);
    if (this.#serverFilter)
      this.#options.onDesktopSize?.(serverInit.readUInt16BE(0), serverInit.readUInt16BE(2));
    if (earlyFromTarget.length > 0) this.#onTargetData(earlyFromTarget);
    if (earlyFromBrowser.length > 0) this.#onBrowserData(earlyFromBrowser);
    if (this.#ended) return;
    for (const source of [target, browser]) if (!this.#throttled.has(source)) source.resume();
  }

  readonly #onTargetData = (chunk: Buffer): void => {
    if (this.#ended) return;
    const lent = this.#lent(chunk);
    if (!this.#serverFilter) {
      this.#toBrowser(chunk, lent?.part());
      lent?.handedOut();
      return;
    }
    const result = this.#serverFilter.push(chunk);
    if ("violation" in result) {
      this.#finish("target-violation", result.violation);
      return;
    }
    // The filter's forwarded runs are views of the chunk (or of a copy); what it holds back it copies.
    for (const step of result.steps) if ("forward" in step) this.#toBrowser(step.forward, lent?.part());
    lent?.handedOut();
  };

  /**
   * For a lent chunk: `part()` gives the write callback for each part of it written on; once all are
   * handed out and written, the chunk is recycled, unless a write failed (a failed write's buffer may
   * still be held by a stream being torn down; the garbage collector takes it then).
   */
  #lent(chunk: Buffer): { part(): WriteCallback; handedOut(): void } | undefined {
    const recycle = this.#options.recycleTargetChunk;
    if (!recycle) return undefined;
    let outstanding = 1;
    let failed = false;
    const settle: WriteCallback = (error) => {
      if (error) failed = true;
      if (--outstanding === 0 && !failed) recycle(chunk);
    };
    return {
      part: () => {
        outstanding++;
        return settle;
      },
      handedOut: () => settle(),
    };
  }

  #toBrowser(data: Buffer, then?: WriteCallback): void {
    this.#options.onServerBytes?.(data.length);
    this.#options.onServerData?.(data);
    this.#browserWritesPending++;
    const written: WriteCallback = then
      ? (error) => {
          this.#browserWritten();
          then(error);
        }
      : this.#browserWritten;
    this.#write(this.#options.target, this.#options.browser, data, written);
  }

  readonly #browserWritten = (): void => {
    this.#browserWritesPending--;
    if (this.#browserWritesPending === 0) this.#onBrowserWritten?.();
  };

  /** Runs `then` once everything relayed to the browser was written, or after CLOSE_GRACE_MS. */
  #afterBrowserWrites(then: () => void): void {
    if (this.#browserWritesPending === 0) {
      then();
      return;
    }
    const timer = setTimeout(() => this.#onBrowserWritten?.(), CLOSE_GRACE_MS);
    timer.unref();
    this.#onBrowserWritten = () => {
      this.#onBrowserWritten = undefined;
      clearTimeout(timer);
      then();
    };
  }

  readonly #onBrowserData = (chunk: Buffer): void => {
    if (this.#ended) return;
    const result = this.#filter.push(chunk);
    if ("violation" in result) {
      this.#finish(result.violation.reason, result.violation.detail);
      return;
    }
    for (const step of result.steps) {
      if ("forward" in step) {
        this.#options.onClientBytes?.(step.forward.length);
        if (this.#options.onClientMessage) eachClientMessage(step.forward, this.#options.onClientMessage);
        this.#write(this.#options.browser, this.#options.target, step.forward);
      } else {
        this.#options.onDropped?.(step.dropped);
      }
    }
  };

  /** Writes to `sink`; when the sink is full, stops reading `source` until it drains. */
  #write(source: Duplex, sink: Duplex, data: Buffer, written?: WriteCallback): void {
    if (sink.write(data, written) || this.#throttled.has(source)) return;
    this.#throttled.add(source);
    source.pause();
    sink.once("drain", () => {
      this.#throttled.delete(source);
      if (!this.#ended) source.resume();
    });
  }

  #watch(stream: Duplex, reason: "browser-closed" | "target-closed"): void {
    const closed = () => this.#finish(reason, this.#relaying ? undefined : "during the handshake");
    stream.on("end", closed);
    stream.on("close", closed);
    stream.on("error", (error: Error) => this.#finish(reason, error.message));
    if (stream.destroyed || stream.readableEnded) queueMicrotask(closed);
  }

  readonly #onAbort = (): void => this.#finish("aborted");

  #finish(reason: RfbBridgeEndReason, detail?: string): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#handshakeTimer);
    this.#options.signal?.removeEventListener("abort", this.#onAbort);
    for (const reader of this.#readers) reader.cancel("bridge ended");

    const { browser, target, closeBrowser } = this.#options;
    const end: RfbBridgeEnd = detail === undefined ? { reason } : { reason, detail };
    // When one side leaves, the other still gets what was already relayed to it; otherwise cut both.
    if (reason === "browser-closed") {
      browser.destroy();
      closeGently(target);
    } else if (reason === "target-closed") {
      target.destroy();
      if (closeBrowser) this.#afterBrowserWrites(() => closeBrowser(end));
      else closeGently(browser);
    } else {
      target.destroy();
      if (closeBrowser) closeBrowser(end);
      else browser.destroy();
    }
    this.#resolve(end);
  }
}

function closeGently(stream: Duplex): void {
  if (stream.destroyed) return;
  stream.end();
  // Keep reading (and discarding) so that the peer's close is noticed.
  stream.resume();
  const timer = setTimeout(() => stream.destroy(), CLOSE_GRACE_MS);
  timer.unref();
  stream.once("close", () => clearTimeout(timer));
}
