/**
 * What noVNC's Websock accepts in place of a WebSocket (core/websock.js `attach`): these properties
 * must exist on the object or its prototype; noVNC sets `binaryType` and the handlers itself.
 */
export interface RfbChannel {
  binaryType: string;
  readonly protocol: string;
  /** A WebSocket's number or an RTCDataChannel's word: noVNC reads both. */
  readonly readyState: number;
  onopen: (() => void) | null;
  onmessage: ((event: { data: ArrayBuffer }) => void) | null;
  onclose: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  send(data: Uint8Array): void;
  close(): void;
}

/** The part of noVNC's RFB client the viewer drives. */
export interface Rfb extends EventTarget {
  viewOnly: boolean;
  scaleViewport: boolean;
  resizeSession: boolean;
  background: string;
  disconnect(): void;
  focus(options?: FocusOptions): void;
}

export type RfbConstructor = new (
  target: HTMLElement,
  channel: RfbChannel,
  options?: { shared?: boolean },
) => Rfb;

/**
 * noVNC touches `WebSocket` and `window` as it loads: imported on first use, a page rendered on a
 * server (Next.js) can still import the viewer.
 */
export async function loadRfb(): Promise<RfbConstructor> {
  const novnc = await import("@novnc/novnc");
  return novnc.default as unknown as RfbConstructor;
}
