/**
 * websockify, played by the emulator: a WebSocket client's frames go to a TCP port of a container
 * and the port's bytes come back as binary frames, as noVNC expects of a vendor's desktop stream.
 * The TCP connection is made before the upgrade is accepted, so a port nothing listens on is an HTTP
 * error rather than a socket that closes at once.
 */
import type { IncomingMessage } from "node:http";
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { createWebSocketStream, WebSocketServer } from "ws";
import { CONNECT_TIMEOUT_MS, type RelayTarget, refuseUpgrade } from "./relay.ts";

export type TcpTarget = Omit<RelayTarget, "path" | "dropHeaders">;

/** The WebSocket side: noVNC asks for the `binary` subprotocol; any other offered one is taken. */
export function websockifyServer(): WebSocketServer {
  return new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) =>
      protocols.has("binary") ? "binary" : (protocols.values().next().value ?? false),
  });
}

export function websockify(
  sockets: WebSocketServer,
  target: TcpTarget,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
): void {
  const upstream = connect({ host: target.host, port: target.port, timeout: CONNECT_TIMEOUT_MS });
  let upgraded = false;
  upstream.once("timeout", () => upstream.destroy(new Error("the port did not answer")));
  upstream.once("error", () => {
    if (!upgraded)
      refuseUpgrade(client, 502, target.errorBody(502, `nothing answered on port ${target.port}`));
  });
  client.once("close", () => {
    if (!upgraded) upstream.destroy();
  });
  upstream.once("connect", () => {
    upstream.setTimeout(0);
    sockets.handleUpgrade(req, client, head, (socket) => {
      upgraded = true;
      const frames = createWebSocketStream(socket);
      const release = target.hold({
        abort: () => {
          socket.terminate();
          upstream.destroy();
        },
      });
      const end = () => {
        release();
        socket.terminate();
        upstream.destroy();
      };
      frames.on("error", end);
      upstream.on("error", end);
      socket.once("close", end);
      upstream.once("close", end);
      frames.pipe(upstream).pipe(frames);
    });
  });
}
