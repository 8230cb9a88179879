/**
 * Traffic to a port of a container, as a vendor's edge proxy relays it: HTTP requests and
 * WebSocket (or any) upgrades go to the container's address on the bridge network. A port nothing
 * listens on answers 502.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { sendJson } from "../http/body.ts";

/** How long reaching the port may take before the relay answers 502. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Headers that belong to this hop, not to the container's server. */
const HOP_HEADERS = [
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
];

export interface RelayTarget {
  /** The container's address. */
  host: string;
  port: number;
  /** The path (and query) the container's server is asked for. */
  path: string;
  /** Headers of the vendor's routing or auth, kept from the container (lower case). */
  dropHeaders: string[];
  /** Keeps the relay's connection until released; the container's owner may cut it (pause, stop). */
  hold(connection: { abort(): void }): () => void;
  /** The error answer's JSON body, for a status and message. */
  errorBody(status: number, message: string): unknown;
}

/** The request's headers as raw pairs, minus this hop's and the vendor's. */
function forwardedHeaders(req: IncomingMessage, target: RelayTarget, keepUpgrade: boolean): string[] {
  const drop = new Set([...(keepUpgrade ? [] : HOP_HEADERS), ...target.dropHeaders]);
  const headers: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? "";
    if (!drop.has(name.toLowerCase())) headers.push(name, req.rawHeaders[i + 1] ?? "");
  }
  return headers;
}

export function relayRequest(target: RelayTarget, req: IncomingMessage, res: ServerResponse): void {
  const upstream = httpRequest({
    host: target.host,
    port: target.port,
    method: req.method,
    path: target.path,
    headers: forwardedHeaders(req, target, false),
    timeout: CONNECT_TIMEOUT_MS,
    agent: false,
  });
  const release = target.hold({
    abort: () => {
      upstream.destroy();
      res.destroy();
    },
  });
  upstream.once("socket", (socket: Socket) => socket.once("connect", () => upstream.setTimeout(0)));
  upstream.once("timeout", () => upstream.destroy(new Error("the port did not answer")));
  upstream.once("response", (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.rawHeaders);
    answer.pipe(res);
  });
  upstream.once("error", () => {
    const message = `nothing answered on port ${target.port}`;
    if (!res.headersSent) sendJson(res, 502, target.errorBody(502, message));
    else res.destroy();
  });
  res.once("close", () => {
    release();
    upstream.destroy();
  });
  req.pipe(upstream);
}

/** An upgrade: the request goes to the port as it came (minus the vendor's headers), then bytes flow both ways. */
export function relayUpgrade(target: RelayTarget, req: IncomingMessage, client: Duplex, head: Buffer): void {
  const upstream = connect({ host: target.host, port: target.port, timeout: CONNECT_TIMEOUT_MS });
  const release = target.hold({
    abort: () => {
      upstream.destroy();
      client.destroy();
    },
  });
  let connected = false;
  upstream.once("connect", () => {
    connected = true;
    upstream.setTimeout(0);
    const lines = [`${req.method} ${target.path} HTTP/1.1`];
    const headers = forwardedHeaders(req, target, true);
    for (let i = 0; i + 1 < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream).pipe(client);
  });
  upstream.once("timeout", () => upstream.destroy(new Error("the port did not answer")));
  upstream.once("error", () => {
    if (!connected)
      refuseUpgrade(client, 502, target.errorBody(502, `nothing answered on port ${target.port}`));
    else client.destroy();
  });
  upstream.once("close", () => {
    release();
    // an upstream that never answered leaves the client its 502 to read
    if (connected) client.destroy();
  });
  client.once("close", () => upstream.destroy());
  client.on("error", () => undefined);
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  502: "Bad Gateway",
};

/** Answers an upgrade request with an error instead, and closes the connection. */
export function refuseUpgrade(client: Duplex, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  client.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
  );
}
