import type { Rfb, RfbChannel } from "./novnc.ts";
import { readStatus, type ScreenStatus } from "./protocol.ts";

/**
 * The proxy's socket as noVNC sees it: binary frames (RFB) go to noVNC, text frames (the proxy's
 * status) to `onStatus`. noVNC never sees socket errors (it only logs them; a close follows).
 */
export class ScreenChannel implements RfbChannel {
  binaryType = "arraybuffer";
  onopen: RfbChannel["onopen"] = null;
  onmessage: RfbChannel["onmessage"] = null;
  onclose: RfbChannel["onclose"] = null;
  onerror: RfbChannel["onerror"] = null;
  readonly #socket: WebSocket;
  #client: Rfb | null = null;

  constructor(socket: WebSocket, onStatus: (status: ScreenStatus) => void) {
    this.#socket = socket;
    socket.binaryType = "arraybuffer";
    socket.addEventListener("message", (event) => {
      if (typeof event.data === "string") {
        const status = readStatus(event.data);
        if (status) onStatus(status);
      } else if (event.data instanceof ArrayBuffer) {
        this.onmessage?.({ data: event.data });
      }
    });
    socket.addEventListener("close", ({ code, reason, wasClean }) => {
      // noVNC reports a close during its handshake on the console as a failure; after its own
      // disconnect() the same close just ends it
      this.#client?.disconnect();
      this.#client = null;
      this.onclose?.({ code, reason, wasClean });
    });
  }

  /** Call right after `new RFB(…, channel)`; the socket must be open by then. */
  heldBy(client: Rfb): void {
    this.#client = client;
    // a disconnected RFB refuses (loudly) to disconnect again
    client.addEventListener("disconnect", () => {
      this.#client = null;
    });
  }

  get protocol(): string {
    return this.#socket.protocol;
  }

  get readyState(): number {
    return this.#socket.readyState;
  }

  send(data: Uint8Array): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(data);
  }

  /** Without a code: noVNC closes on a failure of its own, which must read as a drop (1005), not as 1000. */
  close(): void {
    this.#socket.close();
  }
}
