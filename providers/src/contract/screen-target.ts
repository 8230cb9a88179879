/**
 * Where the screen proxy connects for one screen. Providers produce targets; the proxy seals them
 * into capabilities and connects to them; a browser never sees one.
 */
export type ScreenTarget =
  /** RFB over TCP, e.g. a Docker computer's x11vnc published on 127.0.0.1. */
  | { kind: "vnc"; host: string; port: number; password: string }
  /**
   * RFB carried by a vendor's WebSocket. The URL may hold the vendor's secret (a query parameter,
   * say) and `headers` may add more; both are used by the proxy only.
   */
  | { kind: "vendor-websocket"; url: string; password?: string; headers?: Record<string, string> };
