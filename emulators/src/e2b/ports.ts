/**
 * Traffic to a sandbox's ports, as E2B's edge proxy relays `https://<port>-<sandboxId>.<domain>`
 * (the server names the sandbox and port). A sandbox made with `allowPublicTraffic: false` wants
 * `e2b-traffic-access-token`; a paused sandbox answers 502.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { sendJson } from "../http/body.ts";
import { type RelayTarget, refuseUpgrade, relayRequest, relayUpgrade } from "../machines/index.ts";
import type { Sandbox } from "./sandbox.ts";

const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";

type Refusal = { status: number; message: string };

const errorBody = (status: number, message: string) => ({ code: status, message });

/** Where the request goes, or why it may not. */
function target(sandbox: Sandbox | undefined, port: number, req: IncomingMessage): RelayTarget | Refusal {
  if (sandbox?.state !== "running" || !sandbox.ip) {
    return { status: 502, message: "The sandbox is not running or was not found" };
  }
  const token = sandbox.record.trafficAccessToken;
  if (token && req.headers[TRAFFIC_TOKEN_HEADER] !== token) {
    return { status: 403, message: "the sandbox's ports need a valid e2b-traffic-access-token header" };
  }
  return {
    host: sandbox.ip,
    port,
    path: req.url ?? "/",
    dropHeaders: [TRAFFIC_TOKEN_HEADER, "e2b-sandbox-id", "e2b-sandbox-port"],
    hold: (connection) => sandbox.hold(connection),
    errorBody,
  };
}

export function servePort(
  sandbox: Sandbox | undefined,
  port: number,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const found = target(sandbox, port, req);
  if ("status" in found) {
    req.resume();
    sendJson(res, found.status, errorBody(found.status, found.message));
    return;
  }
  relayRequest(found, req, res);
}

export function upgradePort(
  sandbox: Sandbox | undefined,
  port: number,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const found = target(sandbox, port, req);
  if ("status" in found) refuseUpgrade(socket, found.status, errorBody(found.status, found.message));
  else relayUpgrade(found, req, socket, head);
}
