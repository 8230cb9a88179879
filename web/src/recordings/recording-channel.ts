import type { RfbChannel } from "@novnc/novnc";

const encoder = new TextEncoder();

/**
 * The server's half of the handshake, which a recording leaves out (its first SERVER record is
 * ServerInit): RFB 3.8, one security type (1, None), then SecurityResult OK. noVNC answers each
 * step (its version, the type it picked, ClientInit) and then waits for ServerInit. The version
 * goes in a message of its own: noVNC reads the next step only when a later message arrives.
 */
const HANDSHAKE = [encoder.encode("RFB 003.008\n"), Uint8Array.of(1, 1, 0, 0, 0, 0)];

/**
 * A socket for noVNC's RFB that no server is behind: it plays the handshake when opened and then
 * whatever server bytes the player pushes. What noVNC sends (its answers, pixel format, update
 * requests) goes nowhere, since a recording cannot answer.
 */
export class RecordingChannel implements RfbChannel {
  binaryType = "arraybuffer";
  protocol = "";
  readyState: RfbChannel["readyState"] = "connecting";
  onopen: RfbChannel["onopen"] = null;
  onmessage: RfbChannel["onmessage"] = null;
  onclose: RfbChannel["onclose"] = null;
  onerror: RfbChannel["onerror"] = null;

  send(): void {}

  /** Opens the channel and plays the handshake; call once noVNC holds it (after `new RFB`). */
  open(): void {
    this.readyState = "open";
    this.onopen?.();
    for (const message of HANDSHAKE) this.push(message);
  }

  /** Server bytes, as if they had just arrived from the screen. */
  push(bytes: Uint8Array): void {
    if (this.readyState === "open") this.onmessage?.({ data: bytes });
  }

  close(): void {
    if (this.readyState === "closed") return;
    this.readyState = "closed";
    // as a WebSocket does, later: noVNC is still in its disconnect call and expects the event after
    setTimeout(() => this.onclose?.({ code: 1000, reason: "", wasClean: true }), 0);
  }
}
