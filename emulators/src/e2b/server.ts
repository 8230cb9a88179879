/**
 * One loopback HTTP/1.1 server for all of E2B: the control plane (apiUrl), envd (sandboxUrl, by
 * the `E2b-Sandbox-*` headers) and sandbox ports (`Host: <port>-<sandboxId>.<domain>`, or the same
 * headers with another port).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { sendJson } from "../http/body.ts";
import { listenOn } from "../http/server.ts";
import { type ControlPlane, serveControlPlane } from "./control-plane.ts";
import { ENVD_PORT, serveEnvd } from "./envd.ts";
import { servePort, upgradePort } from "./ports.ts";

export interface ServerOptions {
  plane: ControlPlane;
  domain: string;
  host: string;
  port: number;
  log: (line: string) => void;
}

interface Target {
  sandboxId: string;
  port: number;
}

/** The sandbox port a request is for, by its Host (`<port>-<id>.<domain>`) or E2B's routing headers. */
function targetOf(req: IncomingMessage, domain: string): Target | null {
  const host = (req.headers.host ?? "").toLowerCase().replace(/:\d+$/, "");
  if (host.endsWith(`.${domain}`)) {
    const match = /^(\d+)-([a-z0-9]+)$/.exec(host.slice(0, -domain.length - 1));
    if (match) return { port: Number(match[1]), sandboxId: match[2] ?? "" };
  }
  const sandboxId = req.headers["e2b-sandbox-id"];
  const port = Number(req.headers["e2b-sandbox-port"]);
  if (typeof sandboxId === "string" && Number.isInteger(port)) return { sandboxId, port };
  return null;
}

async function serve(options: ServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = targetOf(req, options.domain);
  if (!target) await serveControlPlane(options.plane, req, res);
  else if (target.port === ENVD_PORT) await serveEnvd(options.plane.registry, target.sandboxId, req, res);
  else servePort(options.plane.registry.get(target.sandboxId), target.port, req, res);
}

function upgrade(options: ServerOptions, req: IncomingMessage, socket: Duplex, head: Buffer): void {
  socket.on("error", () => undefined);
  const target = targetOf(req, options.domain);
  if (!target || target.port === ENVD_PORT) {
    socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return;
  }
  upgradePort(options.plane.registry.get(target.sandboxId), target.port, req, socket, head);
}

export async function listen(options: ServerOptions): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    serve(options, req, res).catch((error: unknown) => {
      options.log(`${req.method} ${req.url} failed: ${error instanceof Error ? error.stack : String(error)}`);
      if (!res.headersSent)
        sendJson(res, 500, { code: 500, message: "the emulator failed to serve this request" });
      else res.destroy();
    });
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    upgrade(options, req, socket, head),
  );
  return { server, url: await listenOn(server, options.host, options.port) };
}
