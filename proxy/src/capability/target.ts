/**
 * What a screen capability opens. The proxy owns this contract: api's providers produce targets,
 * the proxy connects to them, and the browser never sees one (it travels sealed in the token).
 */

export type ScreenMode = "view" | "control";

export const SCREEN_MODES: readonly ScreenMode[] = ["view", "control"];

export type ScreenTarget =
  /** RFB over TCP, e.g. a Docker computer's x11vnc published on 127.0.0.1. */
  | { kind: "vnc"; host: string; port: number; password: string }
  /**
   * RFB carried by a vendor's WebSocket. The URL may hold the vendor's secret (a query parameter,
   * say) and `headers` may add more; both are used by the proxy only.
   */
  | { kind: "vendor-websocket"; url: string; password?: string; headers?: Record<string, string> };
