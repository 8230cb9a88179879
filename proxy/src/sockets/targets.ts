import type { Duplex } from "node:stream";
import { createWebSocketStream, WebSocket } from "ws";
import type { ScreenTarget } from "../capability/index.ts";
import { connectRecycledReads } from "./recycled-reads.ts";

const CONNECT_TIMEOUT_MS = 5_000;

/**
 * Opens the byte stream to a screen: RFB over TCP for a Docker or desktop computer, or the vendor's
 * WebSocket with its secret (in the URL or headers) added here, server-side, never by a browser.
 * Failures carry no detail: vendor errors can echo the URL, and with it the secret.
 */
export function connectTarget(target: ScreenTarget): Promise<ConnectedTarget> {
  return target.kind === "vnc"
    ? connectTcp(target.host, target.port)
    : connectVendor(target.url, target.headers).then((stream) => ({ stream }));
}

export interface ConnectedTarget {
  stream: Duplex;
  /** Present when the stream's chunks are lent (see recycled-reads.ts): hands one back once relayed. */
  recycle?(chunk: Buffer): void;
}

function connectTcp(host: string, port: number): Promise<ConnectedTarget> {
  return new Promise((resolve, reject) => {
    const { socket, recycle } = connectRecycledReads({ host, port });
    const timer = setTimeout(() => fail(), CONNECT_TIMEOUT_MS);
    function fail() {
      clearTimeout(timer);
      socket.destroy();
      reject(new Error("the screen did not answer"));
    }
    socket.once("error", fail);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.off("error", fail);
      resolve({ stream: socket, recycle });
    });
  });
}

function connectVendor(url: string, headers: Record<string, string> | undefined): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, {
      ...(headers ? { headers } : {}),
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      perMessageDeflate: false,
      followRedirects: false,
    });
    const fail = () => {
      socket.terminate();
      reject(new Error("the screen did not answer"));
    };
    socket.once("error", fail);
    socket.once("unexpected-response", fail);
    socket.once("open", () => {
      socket.off("error", fail);
      resolve(createWebSocketStream(socket));
    });
  });
}
