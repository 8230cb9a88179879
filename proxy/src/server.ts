import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import { Hono } from "hono";
import pino, { type Logger } from "pino";
import proxyAddr from "proxy-addr";
import { WebSocketServer } from "ws";
import { ApiLink } from "./api-link/api-link.ts";
import { ControlLeaseWatch } from "./api-link/control-leases.ts";
import {
  CapabilityKeyring,
  CapabilityRefused,
  SCREEN_PATH,
  SCREEN_PROTOCOL,
  type VerifiedCapability,
  verifyCapability,
} from "./capability/index.ts";
import type { ProxyConfig } from "./config.ts";
import { metricsHandler, ProxyMetrics } from "./metrics.ts";
import { originAllowed, SocketLimit, tokenFromProtocols } from "./sockets/admission.ts";
import { ScreenSocket, ScreenWebSocket } from "./sockets/screen-socket.ts";

export { ConfigError } from "@cubicle/config";
export { type ProxyConfig, parseProxyConfig } from "./config.ts";
export { CLOSE } from "./sockets/screen-socket.ts";

// Often enough that a watched computer never looks idle (SANDBOX_IDLE_MS is minutes).
const ACTIVITY_REPORT_MS = 15_000;
// A control socket may open a moment before the proxy hears of its brand-new lease.
const LEASE_ARRIVAL_WAIT_MS = 2_000;

export interface RunningProxy {
  readonly url: string;
  readonly port: number;
  readonly metrics: ProxyMetrics;
  /** True while the control lease stream from api is live. */
  controlLeasesFollowed(): boolean;
  close(): Promise<void>;
}

/**
 * The screen proxy (docs/architecture.md, "Capabilities and live screens"): verifies a capability,
 * connects to its sealed target and relays RFB, doing the VNC authentication itself and enforcing
 * view-only server-side. Stateless: token ids are redeemed at api and control leases are followed
 * from api's stream, so replicas scale out.
 */
export async function startProxy(
  config: ProxyConfig,
  options: { logger?: Logger } = {},
): Promise<RunningProxy> {
  const logger = options.logger ?? pino({ level: config.logLevel, base: { service: "proxy" } });
  const keyring = new CapabilityKeyring({
    current: config.capabilityKey,
    previous: config.previousCapabilityKeys,
  });
  const link = new ApiLink(config.apiUrl, keyring);
  const watch = new ControlLeaseWatch(link, logger);
  const metrics = new ProxyMetrics();
  const perIp = new SocketLimit(config.maxSocketsPerIp);
  // The api's rule (TRUSTED_PROXIES): the peer, unless it is a configured proxy of ours.
  const trustedProxies = proxyAddr.compile([...config.trustedProxies]);
  const clientIp = (request: IncomingMessage) => proxyAddr(request, trustedProxies);
  const perSubject = new SocketLimit(config.maxSocketsPerSubject);
  const sockets = new Set<ScreenSocket>();

  const app = new Hono()
    .get("/health", (c) =>
      c.json({
        ok: true,
        controlLeases: watch.connected ? "followed" : "unavailable",
        sockets: {
          view: [...sockets].filter((s) => s.capability.mode === "view").length,
          control: [...sockets].filter((s) => s.capability.mode === "control").length,
        },
      }),
    )
    .get("/metrics", metricsHandler(metrics, config.metricsToken))
    .all("*", (c) => c.body(null, 404));

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxFrameBytes,
    perMessageDeflate: false,
    WebSocket: ScreenWebSocket,
    handleProtocols: () => SCREEN_PROTOCOL,
  });

  const controlSockets = (leaseId: string) =>
    [...sockets].filter((socket) => socket.capability.controlLeaseId === leaseId);
  watch.on("ended", (leaseId) => {
    for (const socket of controlSockets(leaseId)) socket.close("controlEnded");
  });
  watch.on("changed", (lease) => {
    for (const socket of controlSockets(lease.id)) socket.followLease(lease);
  });
  // Without the stream a release could go unheard: control fails closed, view goes on.
  watch.on("lost", () => {
    for (const socket of sockets)
      if (socket.capability.mode === "control") socket.close("controlUnverifiable");
  });

  /** Unauthorised callers learn nothing: every refusal is the same bare 404. */
  function refuse(socket: Duplex, reason: string, request: IncomingMessage) {
    metrics.refusals.inc({ reason });
    logger.info({ reason, ip: clientIp(request) }, "screen socket refused");
    socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    socket.destroy();
  }

  async function admit(request: IncomingMessage, socket: Duplex, head: Buffer) {
    const ip = clientIp(request);
    if (new URL(request.url ?? "/", "http://proxy").pathname !== SCREEN_PATH)
      return refuse(socket, "path", request);
    if (!originAllowed(request.headers.origin, config.allowedOrigins))
      return refuse(socket, "origin", request);
    const releaseIp = perIp.take(ip);
    if (!releaseIp) return refuse(socket, "ip-limit", request);
    let releaseSubject: (() => void) | undefined;
    try {
      const token = tokenFromProtocols(request.headers["sec-websocket-protocol"], SCREEN_PROTOCOL);
      let capability: VerifiedCapability;
      try {
        capability = await verifyCapability(keyring, token, { replay: link });
      } catch (error) {
        return refuse(socket, error instanceof CapabilityRefused ? error.reason : "api-unavailable", request);
      }
      releaseSubject = perSubject.take(capability.subject);
      if (!releaseSubject) return refuse(socket, "subject-limit", request);
      let lease: Awaited<ReturnType<ControlLeaseWatch["waitFor"]>>;
      if (capability.controlLeaseId !== undefined) {
        lease = await watch.waitFor(capability.controlLeaseId, LEASE_ARRIVAL_WAIT_MS);
        if (
          !lease ||
          lease.workspaceId !== capability.workspaceId ||
          lease.computerId !== capability.computerId ||
          lease.screen !== capability.screen
        )
          return refuse(socket, "control-lease", request);
      }
      const open = await new Promise<ScreenSocket>((resolve) =>
        wss.handleUpgrade(request, socket, head, (ws) =>
          resolve(
            new ScreenSocket({
              socket: ws,
              capability,
              lease,
              idleTimeoutMs: config.idleTimeoutMs,
              maxFrameBytes: config.maxFrameBytes,
              metrics,
              logger,
            }),
          ),
        ),
      );
      sockets.add(open);
      reportActivity([capability.computerId]);
      await open.ended;
      sockets.delete(open);
    } finally {
      releaseIp();
      releaseSubject?.();
    }
  }

  function reportActivity(computerIds: string[]) {
    if (computerIds.length === 0) return;
    link.reportActivity([...new Set(computerIds)]).catch((error: unknown) => {
      logger.debug({ err: error instanceof Error ? error.message : String(error) }, "activity report failed");
    });
  }
  const activityTimer = setInterval(
    () => reportActivity([...sockets].map((socket) => socket.capability.computerId)),
    ACTIVITY_REPORT_MS,
  );

  const server = createServer(getRequestListener(app.fetch));
  server.on("upgrade", (request, socket, head) => {
    socket.on("error", () => socket.destroy());
    admit(request, socket, head).catch((error) => {
      logger.error({ err: error instanceof Error ? error.message : String(error) }, "screen socket failed");
      socket.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => resolve());
  });
  watch.start();
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, "screen proxy listening");

  return {
    url: `http://${config.host}:${port}`,
    port,
    metrics,
    controlLeasesFollowed: () => watch.connected,
    async close() {
      clearInterval(activityTimer);
      await watch.stop();
      for (const socket of sockets) socket.close("shuttingDown");
      await Promise.all([...sockets].map((socket) => socket.ended));
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
