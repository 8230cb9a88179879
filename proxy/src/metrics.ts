import { BearerToken } from "@cubicle/config";
import type { Handler } from "hono";
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { CAPABILITY_MODES } from "./capability/index.ts";

/** What `/metrics` shows. A registry per proxy, so several proxies in one process never share counts. */
export class ProxyMetrics {
  readonly registry = new Registry();
  readonly openSockets = new Gauge({
    name: "cubicle_proxy_open_sockets",
    help: "Screen sockets open now, by mode",
    labelNames: ["mode"] as const,
    registers: [this.registry],
  });
  readonly bytes = new Counter({
    name: "cubicle_proxy_bytes_total",
    help: "Bytes relayed, by direction (to_screen: browser input forwarded; to_browser: screen output)",
    labelNames: ["direction"] as const,
    registers: [this.registry],
  });
  readonly refusals = new Counter({
    name: "cubicle_proxy_refusals_total",
    help: "Socket requests refused before opening, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly droppedInput = new Counter({
    name: "cubicle_proxy_dropped_input_messages_total",
    help: "Input-bearing RFB messages dropped on view-only sockets",
    registers: [this.registry],
  });
  readonly closes = new Counter({
    name: "cubicle_proxy_socket_closes_total",
    help: "Screen sockets closed, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  readonly recordingsActive = new Gauge({
    name: "cubicle_proxy_recordings_active",
    help: "Recordings being streamed to api now",
    registers: [this.registry],
  });
  readonly recordedBytes = new Counter({
    name: "cubicle_proxy_recorded_bytes_total",
    help: "Bytes of recording records sent towards api",
    registers: [this.registry],
  });
  readonly recordingsFailed = new Counter({
    name: "cubicle_proxy_recordings_failed_total",
    help: "Recordings that stopped before their socket ended or were not taken, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "cubicle_proxy_" });
    for (const mode of CAPABILITY_MODES) this.openSockets.set({ mode }, 0);
  }
}

/**
 * GET /metrics answers only to `Authorization: Bearer <METRICS_TOKEN>`: the proxy's port faces
 * browsers. Anyone else, and everyone when no token is configured, gets the proxy's bare 404.
 */
export function metricsHandler(metrics: ProxyMetrics, token: string | undefined): Handler {
  const expected = token === undefined ? undefined : new BearerToken(token);
  return async (c) => {
    if (!expected?.matches(c.req.header("authorization"))) return c.body(null, 404);
    return c.body(await metrics.registry.metrics(), 200, { "content-type": metrics.registry.contentType });
  };
}
