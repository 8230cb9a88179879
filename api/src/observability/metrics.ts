import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";

export interface Metrics {
  registry: Registry;
  middleware: MiddlewareHandler;
  /** Connections a computer's egress policy refused, as the refusal job reads them. */
  egressRefused: Counter<"workspace" | "computer">;
}

/** One registry per app instance, so tests that build several apps do not collide. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: "cubicle_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status.",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "cubicle_http_request_duration_seconds",
    help: "Time to answer HTTP requests, by method and route pattern.",
    labelNames: ["method", "route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const middleware: MiddlewareHandler = async (c, next) => {
    const started = performance.now();
    await next();
    // After next(), the route index points at the handler that answered; its pattern (not the
    // raw path) keeps label cardinality bounded.
    const route = routePath(c);
    const labels = { method: c.req.method, route };
    requests.inc({ ...labels, status: String(c.res.status) });
    duration.observe(labels, (performance.now() - started) / 1000);
  };
  const egressRefused = new Counter({
    name: "cubicle_computer_egress_refused_total",
    help: "Connections a computer's egress policy refused, by workspace and computer.",
    labelNames: ["workspace", "computer"],
    registers: [registry],
  });
  return { registry, middleware, egressRefused };
}
