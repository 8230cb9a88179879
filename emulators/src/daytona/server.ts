/**
 * One loopback HTTP/1.1 server for all of Daytona: the API (`/api`, apiUrl), the toolbox proxy
 * (`/toolbox`, the sandboxes' toolboxProxyUrl) and preview links (`/preview`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { sendJson } from "../http/body.ts";
import { listenOn } from "../http/server.ts";
import { refuseUpgrade } from "../machines/index.ts";
import { type ControlPlane, serveControlPlane } from "./control-plane.ts";
import { authorized, errorBody, notFound, sendError, unauthorized } from "./errors.ts";
import { PREVIEW_PREFIX, servePreview, upgradePreview } from "./preview.ts";
import { serveToolbox, upgradeToolbox } from "./toolbox.ts";

export interface ServerOptions {
  apiKey: string;
  plane: Omit<ControlPlane, "origin">;
  host: string;
  port: number;
  log: (line: string) => void;
}

const API = "/api";
const TOOLBOX = "/toolbox";
/** The SDK's event stream (socket.io); refused, so the SDK polls instead. */
const SOCKET_IO = "/api/socket.io";

function under(pathname: string, prefix: string): string | null {
  if (pathname === prefix) return "/";
  return pathname.startsWith(`${prefix}/`) ? pathname.slice(prefix.length) : null;
}

async function serve(options: ServerOptions, plane: ControlPlane, req: IncomingMessage, res: ServerResponse) {
  const { pathname } = new URL(req.url ?? "/", "http://emulator");
  if (pathname.startsWith(PREVIEW_PREFIX)) return servePreview(plane.registry, req, res);
  if (under(pathname, SOCKET_IO) === null) {
    const api = under(pathname, API);
    const toolbox = under(pathname, TOOLBOX);
    if (api !== null || toolbox !== null) {
      if (!authorized(req, options.apiKey)) {
        req.resume();
        return sendError(res, req, unauthorized());
      }
      if (api !== null) return serveControlPlane(plane, api, req, res);
      if (toolbox !== null) return serveToolbox(plane.registry, toolbox, req, res);
    }
  }
  req.resume();
  sendJson(res, 404, errorBody(notFound(`Cannot ${req.method} ${pathname}`), req));
}

function upgrade(
  options: ServerOptions,
  plane: ControlPlane,
  sockets: WebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
) {
  socket.on("error", () => undefined);
  const { pathname } = new URL(req.url ?? "/", "http://emulator");
  if (pathname.startsWith(PREVIEW_PREFIX)) return upgradePreview(plane.registry, req, socket, head);
  const toolbox = under(pathname, TOOLBOX);
  if (toolbox === null) return refuseUpgrade(socket, 404, errorBody(notFound(`Cannot GET ${pathname}`), req));
  if (!authorized(req, options.apiKey)) return refuseUpgrade(socket, 401, errorBody(unauthorized(), req));
  upgradeToolbox(plane.registry, sockets, toolbox, req, socket, head);
}

export async function listen(options: ServerOptions): Promise<{ server: Server; url: string }> {
  const sockets = new WebSocketServer({ noServer: true });
  const plane: ControlPlane = { ...options.plane, origin: "" };
  const server = createServer((req, res) => {
    serve(options, plane, req, res).catch((error: unknown) => {
      options.log(`${req.method} ${req.url} failed: ${error instanceof Error ? error.stack : String(error)}`);
      sendError(res, req, error);
    });
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    upgrade(options, plane, sockets, req, socket, head),
  );
  plane.origin = await listenOn(server, options.host, options.port);
  return { server, url: plane.origin };
}
