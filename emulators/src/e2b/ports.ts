/**
 * Traffic to a sandbox's ports, as E2B's edge proxy relays `https://<port>-<sandboxId>.<domain>`:
 * HTTP requests and WebSocket upgrades go to the container's address on the bridge network. A
 * sandbox made with `allowPublicTraffic: false` wants `e2b-traffic-access-token`; a paused sandbox,
 * or a port nothing listens on, answers 502.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { sendJson } from "../http/body.ts";
import type { Sandbox } from "./sandbox.ts";

const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";
/** How long reaching the port may take before the relay answers 502. */
const CONNECT_TIMEOUT_MS = 10_000;
/** Headers that belong to this hop (or to E2B's routing), not to the sandbox's server. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  TRAFFIC_TOKEN_HEADER,
  "e2b-sandbox-id",
  "e2b-sandbox-port",
]);

type Refusal = { status: number; message: string };

/** Why the request may not reach the port, or null when it may. */
function refusal(sandbox: Sandbox | undefined, req: IncomingMessage): Refusal | null {
  if (sandbox?.state !== "running" || !sandbox.ip) {
    return { status: 502, message: "The sandbox is not running or was not found" };
  }
  const token = sandbox.record.trafficAccessToken;
  if (token && req.headers[TRAFFIC_TOKEN_HEADER] !== token) {
    return { status: 403, message: "the sandbox's ports need a valid e2b-traffic-access-token header" };
  }
  return null;
}

/** The request's headers as raw pairs, minus this hop's. */
function forwardedHeaders(req: IncomingMessage): string[] {
  const headers: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? "";
    if (!HOP_HEADERS.has(name.toLowerCase())) headers.push(name, req.rawHeaders[i + 1] ?? "");
  }
  return headers;
}

export function relayRequest(
  sandbox: Sandbox | undefined,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const refused = refusal(sandbox, req);
  if (refused || !sandbox?.ip) {
    sendJson(res, refused?.status ?? 502, { code: refused?.status ?? 502, message: refused?.message });
    req.resume();
    return;
  }
  const upstream = httpRequest({
    host: sandbox.ip,
    port,
    method: req.method,
    path: req.url,
    headers: forwardedHeaders(req),
    timeout: CONNECT_TIMEOUT_MS,
    agent: false,
  });
  const release = sandbox.hold({
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
    if (!res.headersSent) sendJson(res, 502, { code: 502, message: `nothing answered on port ${port}` });
    else res.destroy();
  });
  res.once("close", () => {
    release();
    upstream.destroy();
  });
  req.pipe(upstream);
}

/** A WebSocket (or any) upgrade: the request goes to the port as it came, then bytes flow both ways. */
export function relayUpgrade(
  sandbox: Sandbox | undefined,
  port: number,
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
) {
  const refused = refusal(sandbox, req);
  if (refused || !sandbox?.ip) {
    refuseUpgrade(client, refused ?? { status: 502, message: "no address" });
    return;
  }
  const upstream = connect({ host: sandbox.ip, port, timeout: CONNECT_TIMEOUT_MS });
  const release = sandbox.hold({
    abort: () => {
      upstream.destroy();
      client.destroy();
    },
  });
  let connected = false;
  upstream.once("connect", () => {
    connected = true;
    upstream.setTimeout(0);
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    const headers = req.rawHeaders;
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if ((headers[i] ?? "").toLowerCase() !== TRAFFIC_TOKEN_HEADER)
        lines.push(`${headers[i]}: ${headers[i + 1]}`);
    }
    upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream).pipe(client);
  });
  upstream.once("timeout", () => upstream.destroy(new Error("the port did not answer")));
  upstream.once("error", () => {
    if (!connected) refuseUpgrade(client, { status: 502, message: `nothing answered on port ${port}` });
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

function refuseUpgrade(client: Duplex, refused: Refusal): void {
  const body = JSON.stringify({ code: refused.status, message: refused.message });
  const reason = refused.status === 403 ? "Forbidden" : "Bad Gateway";
  client.end(
    `HTTP/1.1 ${refused.status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
