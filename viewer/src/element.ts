import { ScreenChannel } from "./channel.ts";
import { loadRfb, type Rfb, type RfbConstructor } from "./novnc.ts";
import {
  closeOutcome,
  readCapability,
  type ScreenCapability,
  type ScreenMode,
  type ScreenStatus,
  STATUS_PROTOCOL,
} from "./protocol.ts";
import { nextRetryWait } from "./retry.ts";
import { renderScreenParts, type ScreenParts, type ScreenState, showState } from "./view.ts";

export type { ScreenState } from "./view.ts";

export interface CapabilityContext {
  /** "reconnect" when the previous socket dropped or an attempt failed. */
  reason: "initial" | "reconnect";
}
export type GetCapability = (context: CapabilityContext) => Promise<ScreenCapability>;

export interface StateDetail {
  state: ScreenState;
  /** Why: "initial" | "reconnect" (connecting), an end reason (ended), "access-revoked" | "unavailable" (refused). */
  reason?: string;
}
export interface ConnectDetail {
  mode: ScreenMode;
}
export interface DisconnectDetail {
  code: number;
  reason: string;
  willReconnect: boolean;
}
export interface LeaseDetail {
  expiresAt: Date;
}

/** One socket's life; callbacks of a socket that is no longer the element's current one do nothing. */
interface Attempt {
  socket?: WebSocket;
  rfb?: Rfb;
  mode?: ScreenMode;
  live: boolean;
  controlled: boolean;
}

// Node (a server rendering the page) has no HTMLElement; the class is only instantiated in browsers.
const ElementBase = (globalThis.HTMLElement ?? class {}) as typeof HTMLElement;

/**
 * `<cubicle-screen>`: one live screen through Cubicle's screen proxy. Set `getCapability` to a
 * function that fetches a fresh single-use capability from your backend; every attempt asks again.
 * The element fills its box (give it a size); its children are its own (light DOM, so that noVNC's
 * keyboard handling sees its canvas as the document's active element).
 */
export class CubicleScreenElement extends ElementBase {
  static readonly observedAttributes = ["label"];

  #getCapability: GetCapability | null = null;
  /** A connection is asked for (getCapability set or connect() called, and no disconnect() since). */
  #wanted = false;
  #attempt: Attempt | null = null;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #waits = 0;
  #failures = 0;
  #state: ScreenState = "idle";
  #reason: string | undefined;
  #mode: ScreenMode | null = null;
  #leaseExpiresAt: Date | null = null;
  #parts: ScreenParts | null = null;

  get getCapability(): GetCapability | null {
    return this.#getCapability;
  }

  set getCapability(value: GetCapability | null) {
    this.#getCapability = typeof value === "function" ? value : null;
    if (!this.#getCapability) {
      this.disconnect();
      return;
    }
    this.#wanted = true;
    if (this.isConnected) this.#start();
  }

  get state(): ScreenState {
    return this.#state;
  }

  /** The mode of the last socket that went live; null before the first did. */
  get mode(): ScreenMode | null {
    return this.#mode;
  }

  /** When the control lease ends, as the proxy last said (control mode only). */
  get leaseExpiresAt(): Date | null {
    return this.#leaseExpiresAt;
  }

  /** Starts again after `ended`, `refused` or `disconnect()`; nothing while already connecting or live. */
  connect(): void {
    this.#wanted = true;
    if (!this.#getCapability || !this.isConnected || this.#attempt || this.#retryTimer) return;
    this.#start();
  }

  /** Closes the socket and stops reconnecting. */
  disconnect(): void {
    this.#wanted = false;
    this.#stop();
    this.#setState("idle");
  }

  /** Gives noVNC's canvas the keyboard (control mode). */
  override focus(options?: FocusOptions): void {
    this.#attempt?.rfb?.focus(options);
  }

  connectedCallback(): void {
    // a value set on the element before it was defined hides the class's setter
    if (Object.hasOwn(this, "getCapability")) {
      const value = (this as { getCapability: GetCapability | null }).getCapability;
      delete (this as { getCapability?: unknown }).getCapability;
      this.getCapability = value;
    }
    this.#parts ??= renderScreenParts(this);
    this.#show();
    if (this.#wanted && this.#getCapability && !this.#attempt) this.#start();
  }

  disconnectedCallback(): void {
    this.#stop();
    this.#setState("idle");
  }

  attributeChangedCallback(): void {
    this.#show();
  }

  #start(): void {
    this.#waits = 0;
    this.#failures = 0;
    this.#begin("initial");
  }

  #begin(reason: CapabilityContext["reason"]): void {
    this.#stop();
    const getCapability = this.#getCapability;
    if (!getCapability) return;
    const attempt: Attempt = { live: false, controlled: false };
    this.#attempt = attempt;
    this.#leaseExpiresAt = null;
    this.#setState("connecting", reason);
    void this.#open(attempt, getCapability, reason);
  }

  async #open(attempt: Attempt, getCapability: GetCapability, reason: CapabilityContext["reason"]) {
    let opened: { socket: WebSocket; mode: ScreenMode; RFB: RfbConstructor } | undefined;
    try {
      const RFB = await loadRfb();
      const capability = readCapability(await getCapability({ reason }));
      if (this.#attempt !== attempt) return;
      if (capability) {
        const socket = new WebSocket(capability.url, [STATUS_PROTOCOL, capability.token]);
        // the capability has done its one job: only its mode is kept
        opened = { socket, mode: capability.mode, RFB };
      }
    } catch {
      // getCapability failed, or the browser refused the URL: a failed attempt like any other
    }
    if (this.#attempt !== attempt) return;
    if (opened) this.#watch(attempt, opened.mode, opened.socket, opened.RFB);
    else this.#failed();
  }

  #watch(attempt: Attempt, mode: ScreenMode, socket: WebSocket, RFB: RfbConstructor): void {
    attempt.mode = mode;
    attempt.socket = socket;
    const channel = new ScreenChannel(socket, (status) => this.#status(attempt, status));
    socket.addEventListener("close", (event) => this.#closed(attempt, event));
    socket.addEventListener("open", () => {
      if (this.#attempt !== attempt || !this.#parts) {
        socket.close(1000);
        return;
      }
      const rfb = new RFB(this.#parts.stage, channel, { shared: true });
      channel.heldBy(rfb);
      attempt.rfb = rfb;
      rfb.viewOnly = mode === "view";
      rfb.scaleViewport = true;
      rfb.resizeSession = false;
      rfb.background = "transparent";
      rfb.addEventListener("connect", () => this.#live(attempt));
      // the proxy does VNC authentication itself: a screen asking noVNC for a password is not one of
      // ours, and closing counts the attempt as failed
      rfb.addEventListener("credentialsrequired", () => socket.close());
    });
  }

  /** Closing a socket that is still connecting makes the browser complain on the console. */
  #closeWhenOpen(socket: WebSocket): void {
    if (socket.readyState === WebSocket.CONNECTING)
      socket.addEventListener("open", () => socket.close(1000), { once: true });
    else socket.close(1000);
  }

  #live(attempt: Attempt): void {
    if (this.#attempt !== attempt || !attempt.mode) return;
    attempt.live = true;
    this.#waits = 0;
    this.#failures = 0;
    this.#mode = attempt.mode;
    this.#show();
    this.#setState(this.#liveState(attempt));
    this.#emit("connect", { mode: attempt.mode } satisfies ConnectDetail);
  }

  #liveState(attempt: Attempt): ScreenState {
    if (attempt.mode === "control") return "live";
    return attempt.controlled ? "controlled" : "view-only";
  }

  #status(attempt: Attempt, status: ScreenStatus): void {
    if (this.#attempt !== attempt) return;
    if (status.type === "controlled" && attempt.mode === "view") {
      attempt.controlled = status.controlled;
      if (attempt.live) this.#setState(this.#liveState(attempt));
    } else if (status.type === "lease" && attempt.mode === "control") {
      this.#leaseExpiresAt = status.expiresAt;
      this.#emit("lease", { expiresAt: status.expiresAt } satisfies LeaseDetail);
    }
  }

  #closed(attempt: Attempt, { code, reason }: CloseEvent): void {
    if (this.#attempt !== attempt) return;
    this.#attempt = null;
    const outcome = closeOutcome(code);
    if (attempt.live) {
      const willReconnect = outcome.kind === "reconnect";
      this.#emit("disconnect", { code, reason, willReconnect } satisfies DisconnectDetail);
    }
    if (outcome.kind === "reconnect") {
      if (attempt.live) this.#retry();
      else this.#failed();
      return;
    }
    this.#leaseExpiresAt = null;
    // over until connect() says otherwise: moving the element in the page must not start it again
    this.#wanted = false;
    if (outcome.kind === "ended" && outcome.reason === "control-ended") this.#emit("control-ended", {});
    this.#setState(outcome.kind, outcome.reason);
  }

  #failed(): void {
    this.#attempt = null;
    this.#failures += 1;
    this.#retry();
  }

  #retry(): void {
    const wait = nextRetryWait(this.#waits, this.#failures);
    if (wait === null) {
      this.#wanted = false;
      this.#setState("refused", "unavailable");
      return;
    }
    this.#waits += 1;
    this.#setState("connecting", "reconnect");
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#begin("reconnect");
    }, wait);
  }

  /** Ends the current socket and any pending retry: nothing reconnects until asked. */
  #stop(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const attempt = this.#attempt;
    this.#attempt = null;
    if (!attempt) return;
    if (attempt.live) this.#emit("disconnect", { code: 1000, reason: "", willReconnect: false });
    if (attempt.rfb) attempt.rfb.disconnect();
    else if (attempt.socket) this.#closeWhenOpen(attempt.socket);
  }

  #setState(state: ScreenState, reason?: string): void {
    if (state === this.#state && reason === this.#reason) return;
    this.#state = state;
    this.#reason = reason;
    this.#show();
    this.#emit("state", (reason === undefined ? { state } : { state, reason }) satisfies StateDetail);
  }

  #show(): void {
    if (this.#parts)
      showState(this, this.#parts, {
        state: this.#state,
        reason: this.#reason,
        mode: this.#mode,
        label: this.getAttribute("label"),
      });
  }

  #emit(name: string, detail: object): void {
    this.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
  }
}

/** Registers `<cubicle-screen>` once; does nothing where there are no custom elements (a server). */
export function defineCubicleScreen(): void {
  if (typeof customElements === "undefined" || customElements.get("cubicle-screen")) return;
  customElements.define("cubicle-screen", CubicleScreenElement);
}
