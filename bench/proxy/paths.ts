/** The ways the bench's RFB client reaches the same x11vnc: each opens a fresh byte stream. */
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { CapabilityKeyring, mintCapability, SCREEN_PATH, SCREEN_PROTOCOL } from "@cubicle/proxy/capability";
import { createWebSocketStream, WebSocket } from "ws";

export interface RfbPath {
  name: string;
  open(): Promise<Duplex>;
}

export function directPath(vncPort: number): RfbPath {
  return {
    name: "direct",
    open: () =>
      new Promise((resolve, reject) => {
        const socket = connect({ host: "127.0.0.1", port: vncPort, noDelay: true });
        socket.once("error", reject);
        socket.once("connect", () => {
          socket.off("error", reject);
          resolve(socket);
        });
      }),
  };
}

export function websockifyPath(port: number): RfbPath {
  return { name: "websockify", open: () => openWebSocket(`ws://127.0.0.1:${port}/`, []) };
}

/**
 * The proxy with everything on: a freshly minted view capability per socket (each is redeemed at
 * api once), VNC authentication done by the proxy, and view-only filtering of the client stream.
 */
export function proxyPath(port: number, capabilityKey: string, vncPort: number): RfbPath {
  const keyring = new CapabilityKeyring({ current: capabilityKey });
  return {
    name: "proxy",
    async open() {
      const { token } = await mintCapability(keyring, {
        subject: "user:bench",
        workspaceId: "bench-workspace",
        computerId: "bench-computer",
        screen: 0,
        mode: "view",
        // A target's password is a string, but x11vnc runs with -nopw and offers only security
        // type None, which the bridge takes when VNC Authentication is not on offer.
        target: { kind: "vnc", host: "127.0.0.1", port: vncPort, password: "" },
      });
      return openWebSocket(`ws://127.0.0.1:${port}${SCREEN_PATH}`, [SCREEN_PROTOCOL, token]);
    },
  };
}

function openWebSocket(url: string, protocols: string[]): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols, { perMessageDeflate: false });
    socket.binaryType = "nodebuffer";
    socket.once("error", reject);
    socket.once("open", () => {
      socket.off("error", reject);
      resolve(createWebSocketStream(socket));
    });
  });
}
