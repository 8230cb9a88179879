/**
 * One loopback HTTP/1.1 server for Box: the API under `/api/box/v1` (BOX_API_URL) and the boxes'
 * desktop pages and sockets under `/desktop/{id}/` (the desktop URLs' host, token-gated).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { BodyTooLarge, parseJsonObject, readBody } from "../http/body.ts";
import { serveRoutes } from "../http/routes.ts";
import { listenOn } from "../http/server.ts";
import { refuseUpgrade, websockifyServer } from "../machines/index.ts";
import { type ApiCall, maxBodyBytes, ROUTES } from "./api.ts";
import { desktopPath, serveDesktopPage, upgradeDesktop } from "./desktop.ts";
import { BoxError, boxErrorOf, errorBody, sendError } from "./errors.ts";
import type { BoxRegistry } from "./registry.ts";

export const API_PREFIX = "/api/box/v1";

/** An API request as `requests()` gives it; the Authorization header is never kept. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

/** Failures asked for by `failNext`: each of the next `count` API requests answers `status`. */
export interface Failures {
  count: number;
  status: 429 | 503;
  retryAfterSeconds: number;
}

export interface ServerOptions {
  apiKey: string;
  registry: BoxRegistry;
  host: string;
  port: number;
  log: (line: string) => void;
}

/**
 * Past this many requests, or this many bytes of their bodies (file writes are large), the oldest
 * are dropped from the log: a long-lived emulator's memory stays bounded.
 */
const MAX_RECORDED = 10_000;
const MAX_RECORDED_BYTES = 64 * 1024 * 1024;

export class BoxServer {
  /** The logged requests with their bodies' sizes, oldest first. */
  private readonly log: Array<[request: RecordedRequest, bodyBytes: number]> = [];
  private loggedBytes = 0;
  readonly failures: Failures = { count: 0, status: 503, retryAfterSeconds: 1 };
  private readonly server: Server;
  private readonly sockets = websockifyServer();
  private origin = "";

  constructor(private readonly options: ServerOptions) {
    this.server = createServer((req, res) => {
      this.serve(req, res).catch((error: unknown) => {
        options.log(
          `${req.method} ${req.url} failed: ${error instanceof Error ? error.stack : String(error)}`,
        );
        sendError(res, error);
      });
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.upgrade(req, socket, head),
    );
  }

  get httpServer(): Server {
    return this.server;
  }

  async listen(): Promise<string> {
    this.origin = await listenOn(this.server, this.options.host, this.options.port);
    return this.origin;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://emulator");
    const desktop = desktopPath(url.pathname);
    if (desktop?.file === "vnc.html") {
      serveDesktopPage(this.options.registry.get(desktop.boxId), req, res);
      return;
    }
    const path = url.pathname.startsWith(`${API_PREFIX}/`) ? url.pathname.slice(API_PREFIX.length) : null;
    if (path === null) {
      req.resume();
      sendError(res, new BoxError(404, "not_found", `Cannot ${req.method} ${url.pathname}`));
      return;
    }
    const query = Object.fromEntries(url.searchParams);
    const { body, logged, size } = await requestBody(req, path);
    this.record({ method: req.method ?? "GET", path: url.pathname, query, body: logged }, size);
    if (this.failures.count > 0) {
      this.failures.count--;
      const { status, retryAfterSeconds } = this.failures;
      const failure =
        status === 429
          ? new BoxError(429, "rate_limited", "Too many requests; retry later.")
          : new BoxError(503, "service_unavailable", "Box is unavailable; retry later.");
      sendError(res, failure, { "Retry-After": String(retryAfterSeconds) });
      return;
    }
    if (req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      sendError(res, new BoxError(401, "unauthorized", "Unauthorized"));
      return;
    }
    if (body instanceof Error) {
      sendError(res, body);
      return;
    }
    const call: ApiCall = {
      registry: this.options.registry,
      origin: this.origin,
      body,
      query,
    };
    const served = await serveRoutes(ROUTES, call, path, req, res, (error) => {
      const answer = boxErrorOf(error);
      if (answer.status >= 500) this.options.log(`${req.method} ${url.pathname}: ${String(error)}`);
      return [answer.status, errorBody(answer)];
    });
    if (!served) sendError(res, new BoxError(404, "not_found", `Cannot ${req.method} ${url.pathname}`));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => undefined);
    const desktop = desktopPath(new URL(req.url ?? "/", "http://emulator").pathname);
    if (desktop?.file !== "websockify") {
      refuseUpgrade(socket, 404, errorBody(new BoxError(404, "not_found", "No WebSocket here.")));
      return;
    }
    upgradeDesktop(this.sockets, this.options.registry.get(desktop.boxId), req, socket, head);
  }

  get recorded(): RecordedRequest[] {
    return this.log.map(([request]) => request);
  }

  private record(request: RecordedRequest, bodyBytes: number): void {
    this.log.push([request, bodyBytes]);
    this.loggedBytes += bodyBytes;
    while (this.log.length > MAX_RECORDED || this.loggedBytes > MAX_RECORDED_BYTES) {
      this.loggedBytes -= this.log.shift()?.[1] ?? 0;
    }
  }
}

/**
 * The request's JSON body for the route (an error to answer when it is too large or not JSON), and
 * what the log keeps of it.
 */
async function requestBody(
  req: IncomingMessage,
  path: string,
): Promise<{ body: Record<string, unknown> | Error; logged: unknown; size: number }> {
  let bytes: Buffer;
  try {
    bytes = await readBody(req, maxBodyBytes(req.method, path));
  } catch (error) {
    if (!(error instanceof BodyTooLarge)) throw error;
    req.resume();
    return { body: error, logged: null, size: 0 };
  }
  try {
    const body = parseJsonObject(bytes);
    return { body, logged: bytes.length > 0 ? body : null, size: bytes.length };
  } catch (error) {
    return { body: error instanceof Error ? error : new Error(String(error)), logged: null, size: 0 };
  }
}
