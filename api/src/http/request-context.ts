import { AsyncLocalStorage } from "node:async_hooks";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { MiddlewareHandler } from "hono";
import { requestId as honoRequestId } from "hono/request-id";

/**
 * What code far from the handler (Better Auth hooks, the audit log) needs to know about the
 * request it runs for. Kept in AsyncLocalStorage so nobody has to thread it through.
 */
export interface RequestContext {
  requestId: string;
  ip: string | null;
}

const storage = new AsyncLocalStorage<RequestContext>();

export const currentRequest = (): RequestContext | undefined => storage.getStore();

/** Header Better Auth reads the client IP from; set by us, never trusted from the client. */
export const CLIENT_IP_HEADER = "x-cubicle-client-ip";

export const requestIds = (): MiddlewareHandler =>
  // Hono keeps a caller's X-Request-Id only when it is short and plain, so logs cannot be forged.
  honoRequestId({ headerName: "X-Request-Id", generator: () => crypto.randomUUID() });

export function requestContext(options: { trustProxy: boolean }): MiddlewareHandler {
  return async (c, next) => {
    const ip = clientIp(c, options.trustProxy);
    c.req.raw.headers.delete(CLIENT_IP_HEADER);
    if (ip) c.req.raw.headers.set(CLIENT_IP_HEADER, ip);
    await storage.run({ requestId: c.get("requestId"), ip }, next);
  };
}

function clientIp(c: Parameters<MiddlewareHandler>[0], trustProxy: boolean): string | null {
  if (trustProxy) {
    const forwarded = c.req.header("x-forwarded-for")?.split(",")[0]?.trim();
    if (forwarded) return forwarded;
  }
  try {
    return getConnInfo(c).remote.address ?? null;
  } catch {
    // app.request() in tests has no socket.
    return null;
  }
}
