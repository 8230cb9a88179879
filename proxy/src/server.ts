import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import { Hono } from "hono";
import pino, { type DestinationStream, type Logger } from "pino";
import proxyAddr from "proxy-addr";
import { WebSocketServer } from "ws";
import { AccessChangeWatch } from "./api-link/access-changes.ts";
import { ApiLink, grantKey, type ScreenAccess } from "./api-link/api-link.ts";
import { ControlLeaseWatch } from "./api-link/control-leases.ts";
import {
  CapabilityKeyring,
  CapabilityRefused,
  SCREEN_PATH,
  SCREEN_PROTOCOL,
  SCREEN_STATUS_PROTOCOL,
  type VerifiedCapability,
  verifyCapability,
} from "./capability/index.ts";
import type { ProxyConfig } from "./config.ts";
import { metricsHandler, ProxyMetrics } from "./metrics.ts";
import { Recorder } from "./recording/recorder.ts";
import { offeredProtocols, originAllowed, SocketLimit } from "./sockets/admission.ts";
import { ScreenSocket, ScreenWebSocket } from "./sockets/screen-socket.ts";

export { ConfigError } from "@cubicle/config";
export { type ProxyConfig, parseProxyConfig } from "./config.ts";
export { ProxyMetrics } from "./metrics.ts";
export { Recorder } from "./recording/recorder.ts";
export { CLOSE } from "./sockets/screen-socket.ts";

// Often enough that a watched computer never looks idle (SANDBOX_IDLE_MS is minutes).
const ACTIVITY_REPORT_MS = 15_000;
// A control socket may open a moment before the proxy hears of its brand-new lease.
const LEASE_ARRIVAL_WAIT_MS = 2_000;
// How long view sockets outlive a broken access stream. An api restart is back within it (the
// stream reconnects in at most two seconds and every socket is checked again), so viewers do not
// notice routine restarts; an api that stays away cannot leave unverifiable sockets running.
const ACCESS_UNVERIFIED_GRACE_MS = 5_000;
const RECHECK_FLOOR_MS = 250;
// How long a stopping proxy waits for its recordings' last records to reach api; past it, api
// finds the upload cut off and marks the recording incomplete all the same.
const RECORDING_FLUSH_MS = 5_000;
const OUR_PROTOCOLS = [SCREEN_PROTOCOL, SCREEN_STATUS_PROTOCOL];

export interface RunningProxy {
  readonly url: string;
  readonly port: number;
  readonly metrics: ProxyMetrics;
  /** True while the control lease stream from api is live. */
  controlLeasesFollowed(): boolean;
  /** True while the access change stream from api is live. */
  accessChangesFollowed(): boolean;
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
  /** `logDestination` takes the log lines instead of stdout (a test that reads them). */
  options: { logger?: Logger; logDestination?: DestinationStream } = {},
): Promise<RunningProxy> {
  const logger =
    options.logger ?? pino({ level: config.logLevel, base: { service: "proxy" } }, options.logDestination);
  const keyring = new CapabilityKeyring({
    current: config.capabilityKey,
    previous: config.previousCapabilityKeys,
  });
  const link = new ApiLink(config.apiUrl, keyring);
  const watch = new ControlLeaseWatch(link, logger);
  const access = new AccessChangeWatch(link, logger);
  const metrics = new ProxyMetrics();
  const perIp = new SocketLimit(config.maxSocketsPerIp);
  // The api's rule (TRUSTED_PROXIES): the peer, unless it is a configured proxy of ours.
  const trustedProxies = proxyAddr.compile([...config.trustedProxies]);
  const clientIp = (request: IncomingMessage) => proxyAddr(request, trustedProxies);
  const perSubject = new SocketLimit(config.maxSocketsPerSubject);
  const sockets = new Set<ScreenSocket>();
  /**
   * Sockets of people and keys, which access changes apply to and which mean someone is using the
   * computer; api's own recorder sockets are neither (api closes them, and a recorded session must
   * not keep its computer from suspending when idle).
   */
  const peopleSockets = () => [...sockets].filter((socket) => socket.capability.mode !== "record");

  const app = new Hono()
    .get("/health", (c) =>
      c.json({
        ok: true,
        controlLeases: watch.connected ? "followed" : "unavailable",
        accessChanges: access.connected ? "followed" : "unavailable",
        sockets: {
          view: [...sockets].filter((s) => s.capability.mode === "view").length,
          control: [...sockets].filter((s) => s.capability.mode === "control").length,
          record: [...sockets].filter((s) => s.capability.mode === "record").length,
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
    // admission has checked the offer: answer with whichever of ours it named
    handleProtocols: (offered) => OUR_PROTOCOLS.find((protocol) => offered.has(protocol)) ?? SCREEN_PROTOCOL,
  });

  const controlSockets = (leaseId: string) =>
    [...sockets].filter((socket) => socket.capability.controlLeaseId === leaseId);
  watch.on("ended", (leaseId) => {
    for (const socket of controlSockets(leaseId)) socket.close("controlEnded");
  });
  watch.on("changed", (lease) => {
    for (const socket of controlSockets(lease.id)) socket.followLease(lease);
  });
  // Viewers that asked for status hear whether someone controls their screen.
  const showControl = (socket: ScreenSocket) => {
    // while the stream is down nothing is known: viewers keep what they were last told
    if (watch.connected)
      socket.showControlled(watch.controls(socket.capability.computerId, socket.capability.screen));
  };
  watch.on("screens", () => {
    for (const socket of sockets) showControl(socket);
  });
  // Without the stream a release could go unheard: control fails closed (view holds no lease).
  watch.on("lost", () => {
    for (const socket of sockets)
      if (socket.capability.mode === "control") socket.close("controlUnverifiable");
  });

  // Access taken away closes the sockets it opened: api is asked again about every open socket of a
  // workspace whose access changed, and about all of them once the stream is back after a break.
  let accessEvents = 0;
  let unverified: NodeJS.Timeout | undefined;
  access.on("changed", (workspaceId) => {
    accessEvents++;
    void recheckAccess(peopleSockets().filter((socket) => socket.capability.workspaceId === workspaceId));
  });
  access.on("ready", () => {
    accessEvents++;
    clearTimeout(unverified);
    void recheckAccess(peopleSockets());
  });
  // Control fails closed at once, as above; view sockets get a short grace (see its constant).
  access.on("lost", () => {
    accessEvents++;
    for (const socket of sockets)
      if (socket.capability.mode === "control") socket.close("controlUnverifiable");
    unverified = setTimeout(() => {
      for (const socket of peopleSockets()) socket.close("accessUnverifiable");
    }, ACCESS_UNVERIFIED_GRACE_MS).unref();
  });

  /**
   * Closes each socket whose subject may no longer hold its mode, and checks again when access
   * ends by itself; fails closed when api cannot say.
   */
  async function recheckAccess(open: ScreenSocket[]) {
    if (open.length === 0) return;
    let access: Map<string, ScreenAccess>;
    try {
      access = await link.screenAccess(open.map((socket) => socket.capability));
    } catch (error) {
      logger.warn({ err: error instanceof Error ? error.message : String(error) }, "access check failed");
      for (const socket of open) socket.close("accessUnverifiable");
      return;
    }
    for (const socket of open) {
      const { subject, workspaceId, computerId, mode, jti } = socket.capability;
      const now = access.get(grantKey(socket.capability));
      if (now?.modes.includes(mode) && originAllowed(socket.origin, originRule(socket.capability, now))) {
        if (now.endsAt) recheckAt(socket, now.endsAt);
        continue;
      }
      logger.info(
        { subject, workspace: workspaceId, computer: computerId, mode, jti },
        "screen access ended",
      );
      socket.close("accessRevoked");
    }
  }

  const endings = new Map<ScreenSocket, NodeJS.Timeout>();
  function recheckAt(socket: ScreenSocket, endsAt: Date) {
    clearTimeout(endings.get(socket));
    // api judges the end by the database's clock: if ours runs ahead, ask again shortly, not in a
    // loop. Timers hold at most about 24.8 days; a later end is looked at again then.
    const wait = Math.min(Math.max(RECHECK_FLOOR_MS, endsAt.getTime() - Date.now()), 2 ** 31 - 1);
    endings.set(
      socket,
      setTimeout(() => void recheckAccess([socket]), wait),
    );
  }

  /** Unauthorised callers learn nothing: every refusal is the same bare 404. */
  function refuse(socket: Duplex, reason: string, request: IncomingMessage) {
    metrics.refusals.inc({ reason });
    // A token signed with our key but naming another target than it seals: the key is misused.
    logger[reason === "target-mismatch" ? "warn" : "info"](
      { reason, ip: clientIp(request) },
      "screen socket refused",
    );
    socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    socket.destroy();
  }

  /** Which origins may hold this socket: the dashboard's, the workspace's embed origins, or the one it is bound to. */
  const originRule = (capability: VerifiedCapability, granted: ScreenAccess) => ({
    dashboard: config.allowedOrigins,
    embed: granted.origins,
    bound: capability.origin,
  });

  async function admit(request: IncomingMessage, socket: Duplex, head: Buffer) {
    const ip = clientIp(request);
    const origin = request.headers.origin;
    if (new URL(request.url ?? "/", "http://proxy").pathname !== SCREEN_PATH)
      return refuse(socket, "path", request);
    const releaseIp = perIp.take(ip);
    if (!releaseIp) return refuse(socket, "ip-limit", request);
    let releaseSubject: (() => void) | undefined;
    try {
      const offered = offeredProtocols(request.headers["sec-websocket-protocol"], OUR_PROTOCOLS);
      let capability: VerifiedCapability;
      try {
        // A page of a site we do not know still spends its token here: the workspace's embed origins
        // are known only once the token says which workspace it is for.
        capability = await verifyCapability(keyring, offered?.token, { replay: link });
      } catch (error) {
        return refuse(socket, error instanceof CapabilityRefused ? error.reason : "api-unavailable", request);
      }
      releaseSubject = perSubject.take(capability.subject);
      if (!releaseSubject) return refuse(socket, "subject-limit", request);
      let granted: ScreenAccess | undefined;
      let lease: Awaited<ReturnType<ControlLeaseWatch["waitFor"]>>;
      let eventsBefore = accessEvents;
      if (capability.mode === "record") {
        // api's recorder is a program: no page, of whatever site, may hold a socket that skips checks
        if (origin !== undefined) return refuse(socket, "origin", request);
        // api opens one per recorded session, all from its own address: only api mints these, and
        // the per-subject limit still holds, so the per-IP limit (for browsers) does not count them
        releaseIp();
      } else {
        // A capability outlives a minute of changes: access is checked now, not only at minting.
        if (!(await access.whenConnected(LEASE_ARRIVAL_WAIT_MS)))
          return refuse(socket, "access-unverifiable", request);
        eventsBefore = accessEvents;
        try {
          granted = (await link.screenAccess([capability])).get(grantKey(capability));
        } catch {
          return refuse(socket, "api-unavailable", request);
        }
        if (!granted?.modes.includes(capability.mode)) return refuse(socket, "access-revoked", request);
        if (!originAllowed(origin, originRule(capability, granted))) return refuse(socket, "origin", request);
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
      }
      // the service token is at hand before the upgrade, so that the recording starts with the socket
      const recording =
        capability.recordingId === undefined
          ? undefined
          : { recordingId: capability.recordingId, authorization: await link.authorization() };
      const open = await new Promise<ScreenSocket>((resolve) =>
        wss.handleUpgrade(request, socket, head, (ws) =>
          resolve(
            new ScreenSocket({
              socket: ws,
              capability,
              origin,
              statusFrames: offered?.protocol === SCREEN_STATUS_PROTOCOL,
              lease,
              idleTimeoutMs: config.idleTimeoutMs,
              maxFrameBytes: config.maxFrameBytes,
              recorder:
                recording &&
                new Recorder({
                  ...recording,
                  apiUrl: link.apiUrl,
                  maxBufferedBytes: config.recordingBufferBytes,
                  partMs: config.recordingPartMs,
                  metrics,
                  logger,
                }),
              metrics,
              logger,
            }),
          ),
        ),
      );
      sockets.add(open);
      showControl(open);
      if (granted) {
        // A change heard between the check and now found no socket to close: check this one again.
        if (accessEvents !== eventsBefore) void recheckAccess([open]);
        if (granted.endsAt) recheckAt(open, granted.endsAt);
        reportActivity([capability.computerId]);
      }
      await open.ended;
      sockets.delete(open);
      clearTimeout(endings.get(open));
      endings.delete(open);
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
    () => reportActivity(peopleSockets().map((socket) => socket.capability.computerId)),
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
  access.start();
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, "screen proxy listening");

  return {
    url: `http://${config.host}:${port}`,
    port,
    metrics,
    controlLeasesFollowed: () => watch.connected,
    accessChangesFollowed: () => access.connected,
    async close() {
      clearInterval(activityTimer);
      await watch.stop();
      access.stop();
      clearTimeout(unverified);
      const open = [...sockets];
      for (const socket of open) socket.close("shuttingDown");
      await Promise.all(open.map((socket) => socket.ended));
      let flushing: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(open.map((socket) => socket.recordingSettled)),
        new Promise((resolve) => {
          flushing = setTimeout(resolve, RECORDING_FLUSH_MS);
        }),
      ]);
      clearTimeout(flushing);
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
