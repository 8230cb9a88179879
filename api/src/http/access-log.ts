import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context.ts";

/** One structured line per request; health and metrics scrapes log at debug to keep logs readable. */
export function accessLog(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const path = new URL(c.req.url).pathname;
    const quiet = path === "/health" || path === "/metrics";
    c.var.deps.logger[quiet ? "debug" : "info"](
      {
        requestId: c.var.requestId,
        method: c.req.method,
        path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      "request",
    );
  };
}
