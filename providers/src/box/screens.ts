import { ProviderError, type ScreenTarget } from "../contract/index.ts";
import type { SandboxLayout } from "../remote/machine.ts";

/**
 * Box's sandbox: user `user`, one X display `:0`, which is the box's one desktop and so Cubicle's
 * only screen. Box serves that display itself (its noVNC page), so no screen servers of Cubicle's
 * run there and the port bases are never used.
 */
export const BOX_LAYOUT: SandboxLayout = {
  userHome: "/home/user",
  user: { uid: 1000, gid: 1000 },
  displayBase: 0,
  webPortBase: 6080,
  vncPortBase: 5900,
};

/** Box has one desktop per box. */
export const BOX_MAX_SCREENS = 1;

export function requireBoxScreen(index: number): void {
  if (index !== 0) {
    throw new ProviderError(
      "INVALID_SCREEN",
      `screen ${index} does not exist: a box has one desktop, screen 0`,
    );
  }
}

/**
 * Where the screen proxy reaches the box's desktop, from the noVNC page address Box gave: the
 * page's WebSocket (noVNC's `path` parameter, else `websockify` beside the page) with the page's
 * `_token`, and the VNC password when the address carries one. It is sealed into the capability
 * by the api; no browser, log or stored record sees it.
 */
export function desktopTarget(desktopUrl: string): ScreenTarget {
  const page = new URL(desktopUrl);
  const path = page.searchParams.get("path");
  const socket = path === null ? new URL("websockify", page) : new URL(`/${path.replace(/^\/+/, "")}`, page);
  socket.protocol = page.protocol === "https:" ? "wss:" : "ws:";
  socket.search = "";
  const token = page.searchParams.get("_token");
  if (token !== null) socket.searchParams.set("_token", token);
  const password = page.searchParams.get("password");
  return { kind: "vendor-websocket", url: socket.toString(), ...(password ? { password } : {}) };
}
