import { verifyServiceToken } from "@cubicle/proxy/capability";
import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { z } from "zod";
import { touchComputer } from "../computers/lifecycle.ts";
import type { AppEnv } from "../context.ts";
import { HttpProblem, noSuchRoute } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { allLiveLeases, CONTROL_LEASES_CHANNEL, type LeaseEvent } from "../screens/control-leases.ts";
import { redeem } from "./redemptions.ts";

// The proxy treats 25 s of silence as a dead stream.
const KEEP_ALIVE_MS = 10_000;

const ActivitySchema = z.object({ computerIds: z.array(z.string().min(1).max(200)).max(10_000) });

const RedemptionSchema = z.object({
  jti: z.string().min(1).max(200),
  expiresAt: z.iso.datetime({ offset: true }),
});

/**
 * What proxy replicas ask of api: the replay guard for capabilities, and a stream of control
 * lease changes (how every replica closes control sockets within a second of release or expiry),
 * and which computers have open screen sockets (activity, for idle suspension).
 * Not part of the public API (no /v1, not in the OpenAPI document). Callers prove themselves with a
 * proxy service token; anyone else gets the answer of an unknown path.
 */
export function proxyRoutes() {
  const app = createRouter();
  app.use("/internal/proxy/*", async (c, next) => {
    const token = c.req.header("authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
    try {
      await verifyServiceToken(c.var.deps.capabilities, token);
    } catch {
      throw noSuchRoute();
    }
    await next();
  });

  app.post("/internal/proxy/redemptions", async (c) => {
    const body = RedemptionSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success) throw new HttpProblem(400, "VALIDATION_FAILED", "Send {jti, expiresAt}.");
    const redeemed = await redeem(c.var.deps.database.db, body.data.jti, new Date(body.data.expiresAt));
    return c.json({ redeemed }, redeemed ? 201 : 409);
  });

  // Open screen sockets are use: a computer someone watches is not idle.
  app.post("/internal/proxy/activity", async (c) => {
    const body = ActivitySchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success) throw new HttpProblem(400, "VALIDATION_FAILED", "Send {computerIds}.");
    for (const computerId of new Set(body.data.computerIds))
      await touchComputer(c.var.deps.database.db, computerId);
    return c.body(null, 204);
  });

  app.get("/internal/proxy/control-leases", (c) => streamLeases(c));
  return app;
}

/**
 * `snapshot` (every live lease), then `granted` / `renewed` (a lease) and `ended` ({id, reason})
 * as they commit. The stream ends when api shuts down, or when the database connection it
 * listens on was lost and re-established (changes may have been missed meanwhile), so the proxy
 * reconnects and starts again from a fresh snapshot.
 */
function streamLeases(c: Context<AppEnv>) {
  const { database, logger, stopping } = c.var.deps;
  const response = streamSSE(c, (stream) =>
    followLeases(stream).catch((error: unknown) => {
      logger.error({ err: error }, "control lease stream failed");
    }),
  );
  // Its connection is not reused: an idle kept-alive socket would hold up a shutdown's close().
  response.headers.set("connection", "close");
  return response;

  async function followLeases(stream: SSEStreamingApi) {
    const pending: LeaseEvent[] = [];
    let wake = () => {};
    let stale = false;
    const finish = () => wake();
    // Listening starts before the snapshot is read, so no change falls between the two; a change
    // that the snapshot already shows is sent again, which a proxy applies idempotently.
    const unlisten = await database.listen(
      CONTROL_LEASES_CHANNEL,
      (payload) => {
        try {
          pending.push(JSON.parse(payload) as LeaseEvent);
        } catch (error) {
          logger.error({ err: error }, "malformed control lease notification");
        }
        wake();
      },
      () => {
        stale = true;
        wake();
      },
    );
    stopping.addEventListener("abort", finish);
    stream.onAbort(finish);
    try {
      const leases = await allLiveLeases(database.db);
      await stream.writeSSE({ event: "snapshot", data: JSON.stringify({ leases }) });
      while (!stream.aborted && !stopping.aborted && !stale) {
        const event = pending.shift();
        if (event) {
          await stream.writeSSE(
            event.type === "ended"
              ? { event: "ended", data: JSON.stringify({ id: event.id, reason: event.reason }) }
              : { event: event.type, data: JSON.stringify(event.lease) },
          );
          continue;
        }
        const woken = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), KEEP_ALIVE_MS);
          wake = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        if (!woken) await stream.write(": keep-alive\n\n");
      }
    } finally {
      stopping.removeEventListener("abort", finish);
      await unlisten();
    }
  }
}
