/**
 * Preview links: `http://127.0.0.1:P/preview/{sandboxId}/{port}/…`, the loopback stand-in for
 * Daytona's `https://{port}-{sandboxId}.proxy…` (host routing needs names loopback does not have).
 * Requests and WebSocket upgrades under it go to that port of the container, with the rest of the
 * path; each must carry the sandbox's preview token of this start (header
 * `x-daytona-preview-token`, or query `DAYTONA_SANDBOX_AUTH_KEY` as the SDK's browser path sends).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { sendJson } from "../http/body.ts";
import { type RelayTarget, refuseUpgrade, relayRequest, relayUpgrade } from "../machines/index.ts";
import { DaytonaHttpError, errorBody, notStarted } from "./errors.ts";
import type { SandboxRegistry } from "./registry.ts";

export const PREVIEW_PREFIX = "/preview/";
const TOKEN_HEADER = "x-daytona-preview-token";
const TOKEN_QUERY = "DAYTONA_SANDBOX_AUTH_KEY";

export function previewUrl(origin: string, sandboxId: string, port: number): string {
  return `${origin}${PREVIEW_PREFIX}${sandboxId}/${port}`;
}

/** Where the request goes, or why it may not. */
function target(registry: SandboxRegistry, req: IncomingMessage): RelayTarget | DaytonaHttpError {
  const url = new URL(req.url ?? "/", "http://emulator");
  const match = /^\/preview\/([^/]+)\/(\d{1,5})(\/.*)?$/.exec(url.pathname);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535)
    return new DaytonaHttpError(404, "no such preview", "NOT_FOUND", "DAYTONA_PROXY");
  const sandbox = registry.get(match[1] ?? "");
  const token = req.headers[TOKEN_HEADER] ?? url.searchParams.get(TOKEN_QUERY);
  if (!sandbox) return new DaytonaHttpError(404, "sandbox not found", "NOT_FOUND", "DAYTONA_PROXY");
  if (!sandbox.previewToken || !sandbox.ip) return notStarted();
  if (!sandbox.record.public && token !== sandbox.previewToken) {
    return new DaytonaHttpError(401, "invalid preview token", "UNAUTHORIZED", "DAYTONA_PROXY");
  }
  url.searchParams.delete(TOKEN_QUERY);
  registry.touch(sandbox);
  return {
    host: sandbox.ip,
    port,
    path: `${match[3] ?? "/"}${url.search}`,
    dropHeaders: [TOKEN_HEADER],
    hold: (connection) => sandbox.hold(connection),
    errorBody: (status, message) =>
      errorBody(new DaytonaHttpError(status, message, "BAD_GATEWAY", "DAYTONA_PROXY"), req),
  };
}

export function servePreview(registry: SandboxRegistry, req: IncomingMessage, res: ServerResponse): void {
  const found = target(registry, req);
  if (found instanceof DaytonaHttpError) {
    req.resume();
    sendJson(res, found.status, errorBody(found, req));
    return;
  }
  relayRequest(found, req, res);
}

export function upgradePreview(
  registry: SandboxRegistry,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
) {
  const found = target(registry, req);
  if (found instanceof DaytonaHttpError) refuseUpgrade(socket, found.status, errorBody(found, req));
  else relayUpgrade(found, req, socket, head);
}
