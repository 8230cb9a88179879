import { MAX_CLAIM_ID_LENGTH } from "@cubicle/proxy/capability";
import type { Context } from "hono";
import { z } from "zod";
import { touchComputer } from "../computers/lifecycle.ts";
import type { AppEnv } from "../context.ts";
import { embedOriginsOf } from "../embedding/origins.ts";
import { iso } from "../http/iso.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { ACCESS_CHANGES_CHANNEL, screenAccessOf } from "../screens/access.ts";
import { allLiveLeases, CONTROL_LEASES_CHANNEL, type LeaseEvent } from "../screens/control-leases.ts";
import { streamNotifications } from "./notification-stream.ts";
import { redeem } from "./redemptions.ts";
import { serviceOnly } from "./service-only.ts";

// Ids as long as a capability may carry: the proxy refuses a token naming a longer one itself.
const ClaimId = z.string().min(1).max(MAX_CLAIM_ID_LENGTH);

const ActivitySchema = z.object({ computerIds: z.array(ClaimId).max(10_000) });

const AccessSchema = z.object({
  grants: z.array(z.object({ subject: ClaimId, workspaceId: ClaimId })).max(10_000),
});

const RedemptionSchema = z.object({
  jti: ClaimId,
  expiresAt: z.iso.datetime({ offset: true }),
});

/**
 * What proxy replicas ask of api: the replay guard for capabilities, a stream of control lease
 * changes (how every replica closes control sockets within a second of release or expiry), a
 * stream of access changes and the check it prompts (how every replica closes the sockets of
 * access taken away within a second), and which computers have open screen sockets (activity, for
 * idle suspension).
 * Not part of the public API (no /v1, not in the OpenAPI document). Callers prove themselves with a
 * proxy service token; anyone else gets the answer of an unknown path.
 */
export function proxyRoutes() {
  const app = createRouter();
  app.use("/internal/proxy/*", serviceOnly("proxy"));

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
    for (const computerId of new Set(body.data.computerIds)) await touchComputer(c.var.deps, computerId);
    return c.body(null, 204);
  });

  // The modes each capability's subject may still hold a socket in, and the workspace's embed
  // origins (other sites whose pages may hold them): asked at admission, and again for the open
  // sockets of a workspace whose access changed.
  app.post("/internal/proxy/access", async (c) => {
    const body = AccessSchema.safeParse(await c.req.json().catch(() => undefined));
    if (!body.success)
      throw new HttpProblem(400, "VALIDATION_FAILED", "Send {grants: [{subject, workspaceId}]}.");
    const { db } = c.var.deps.database;
    const grants = [];
    const origins = new Map<string, string[]>();
    for (const grant of body.data.grants) {
      const { modes, endsAt } = await screenAccessOf(db, grant.subject, grant.workspaceId);
      let listed = origins.get(grant.workspaceId);
      if (!listed) {
        listed = await embedOriginsOf(db, grant.workspaceId);
        origins.set(grant.workspaceId, listed);
      }
      grants.push({ ...grant, modes, endsAt: endsAt && iso(endsAt), origins: listed });
    }
    return c.json({ grants }, 200);
  });

  app.get("/internal/proxy/control-leases", (c) => streamLeases(c));
  app.get("/internal/proxy/access-changes", (c) => streamAccessChanges(c));
  return app;
}

/**
 * `snapshot` (every live lease), then `granted` / `renewed` (a lease) and `ended` ({id, reason})
 * as they commit.
 */
function streamLeases(c: Context<AppEnv>) {
  return streamNotifications(c, {
    channel: CONTROL_LEASES_CHANNEL,
    name: "control lease",
    first: async () => ({
      event: "snapshot",
      data: JSON.stringify({ leases: await allLiveLeases(c.var.deps.database.db) }),
    }),
    toMessage(payload) {
      const event = JSON.parse(payload) as LeaseEvent;
      return event.type === "ended"
        ? { event: "ended", data: JSON.stringify({ id: event.id, reason: event.reason }) }
        : { event: event.type, data: JSON.stringify(event.lease) };
    },
  });
}

/**
 * `ready` once api listens, then `changed` ({workspaceId}) whenever access in a workspace may
 * have been taken away. The proxy checks its sockets there again (POST /internal/proxy/access):
 * all of them on `ready`, since changes may have gone unheard while it was not following.
 */
function streamAccessChanges(c: Context<AppEnv>) {
  return streamNotifications(c, {
    channel: ACCESS_CHANGES_CHANNEL,
    name: "access change",
    first: async () => ({ event: "ready", data: "{}" }),
    toMessage(payload) {
      const { workspaceId } = z.object({ workspaceId: z.string() }).parse(JSON.parse(payload));
      return { event: "changed", data: JSON.stringify({ workspaceId }) };
    },
  });
}
