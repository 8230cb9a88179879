import { AsyncLocalStorage } from "node:async_hooks";
import type { HttpBindings } from "@hono/node-server";
import type { MiddlewareHandler } from "hono";
import { requestId as honoRequestId } from "hono/request-id";
import proxyAddr from "proxy-addr";

/**
 * What code far from the handler (Better Auth hooks, the audit log) needs to know about the
 * request it runs for. Kept in AsyncLocalStorage so nobody has to thread it through.
 */
export interface RequestContext {
  requestId: string;
  ip: string | null;
  /** The error Better Auth last logged for this request: the 500s it throws do not carry it. */
  authFailure?: unknown;
}

const storage = new AsyncLocalStorage<RequestContext>();

export const currentRequest = (): RequestContext | undefined => storage.getStore();

/** Header Better Auth reads the client IP from; set by us, never trusted from the client. */
export const CLIENT_IP_HEADER = "x-cubicle-client-ip";

export const requestIds = (): MiddlewareHandler =>
  // Hono keeps a caller's X-Request-Id only when it is short and plain, so logs cannot be forged.
  honoRequestId({ headerName: "X-Request-Id", generator: () => crypto.randomUUID() });

/**
 * The client of a request is the peer that connected, unless that peer is one of
 * `trustedProxies` (TRUSTED_PROXIES): then X-Forwarded-For is read from the right, through every
 * trusted hop, to the first address no trusted proxy vouches for. What is left of it was written by
 * someone we do not trust (the browser), so it is never read. The dashboard's server is such a proxy:
 * it sends the address it saw the browser connect from (web/server.mjs).
 */
export function requestContext(options: { trustedProxies: readonly string[] }): MiddlewareHandler {
  const trusted = proxyAddr.compile([...options.trustedProxies]);
  return async (c, next) => {
    const ip = clientIp(c, trusted);
    c.req.raw.headers.delete(CLIENT_IP_HEADER);
    if (ip) c.req.raw.headers.set(CLIENT_IP_HEADER, ip);
    await storage.run({ requestId: c.get("requestId"), ip }, next);
  };
}

function clientIp(c: Parameters<MiddlewareHandler>[0], trusted: ReturnType<typeof proxyAddr.compile>) {
  const incoming = (c.env as Partial<HttpBindings> | undefined)?.incoming;
  // app.request() in tests has no socket.
  if (!incoming?.socket.remoteAddress) return null;
  return proxyAddr(incoming, trusted);
}
