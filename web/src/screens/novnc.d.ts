// The part of noVNC's RFB client the dashboard uses (the package ships no types).
declare module "@novnc/novnc" {
  export interface RfbOptions {
    wsProtocols?: string[];
  }
  /**
   * What noVNC's Websock accepts in place of a WebSocket (core/websock.js `attach`): these
   * properties must exist on the object; it sets `binaryType` and the handlers itself and reads
   * `readyState` as a WebSocket's number or an RTCDataChannel's word.
   */
  export interface RfbChannel {
    binaryType: string;
    protocol: string;
    readyState: "connecting" | "open" | "closing" | "closed";
    onopen: (() => void) | null;
    onmessage: ((event: { data: ArrayBuffer | Uint8Array }) => void) | null;
    onclose: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null;
    onerror: ((event: unknown) => void) | null;
    send(data: Uint8Array): void;
    close(): void;
  }
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | RfbChannel, options?: RfbOptions);
    viewOnly: boolean;
    scaleViewport: boolean;
    background: string;
    disconnect(): void;
    focus(): void;
    /** Sends text to the server's clipboard (ClientCutText); the server's comes as a "clipboard" event. */
    clipboardPasteFrom(text: string): void;
    blur(): void;
  }
}
