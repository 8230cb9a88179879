import { randomUUID } from "node:crypto";
import { SCREEN_MODES, SCREEN_PROTOCOL, SCREEN_PATH as SOCKET_PATH } from "@cubicle/proxy/capability";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { hasRole } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import { requireComputer } from "../computers/repository.ts";
import type { AppEnv } from "../context.ts";
import { EmbedOrigin } from "../embedding/origins.ts";
import { iso } from "../http/iso.ts";
import { jsonResponse as json, pathParam } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { holderOfCaller } from "./access.ts";
import { mintScreenCapability } from "./capabilities.ts";
import {
  describeControlHolder,
  endLease,
  grantLease,
  isHeldBy,
  isLive,
  isUniqueViolation,
  type LiveLease,
  leaseOnScreen,
  liveLease,
  renewLease,
} from "./control-leases.ts";
import { closeControlUnlessHeld, openControlFor } from "./control-server.ts";

const ScreenParams = WorkspaceIdParam.extend({
  computerId: pathParam("computerId"),
  index: z
    .string()
    .regex(/^[0-7]$/, "a screen index from 0 to 7")
    .transform(Number)
    .openapi({ param: { name: "index", in: "path" }, description: "Screen index, 0 to 7.", example: "0" }),
});
const LeaseParams = ScreenParams.extend({ leaseId: pathParam("leaseId") });

const SCREEN_PATH = "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}";

const CapabilitySchema = z
  .object({
    token: z.string().openapi({
      description:
        "Present it to the proxy when opening the socket (never in a URL). Single use, valid ≤ 60 s.",
    }),
    expiresAt: z.string().datetime(),
    mode: z.enum(SCREEN_MODES),
    url: z.string().openapi({ description: "The WebSocket URL to open (the proxy's screen socket)." }),
    protocol: z.string().openapi({ description: "The WebSocket subprotocol to ask for beside the token." }),
    recorded: z.boolean().openapi({
      description:
        "Whether the screen is being recorded: this socket (control, where the workspace records it), " +
        "or a recording of the screen in progress. Show it.",
    }),
  })
  .openapi("ScreenCapability");

const ControlLeaseSchema = z
  .object({
    leaseId: z.string(),
    fence: z.number().int(),
    expiresAt: z.string().datetime(),
    screen: z.number().int(),
  })
  .openapi("ControlLease");

const CurrentControlSchema = z
  .object({
    leaseId: z.string(),
    holder: z.object({ type: z.enum(["user", "api_key"]), id: z.string(), name: z.string() }),
    expiresAt: z.string().datetime(),
  })
  .openapi("ScreenController");

const mintCapability = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "mintScreenCapability",
    method: "post",
    path: `${SCREEN_PATH}/capabilities`,
    summary: "Get a capability to open one screen through the screen proxy",
    description:
      "Any member or API key may watch (`view`: input is dropped by the proxy). `control` needs a person " +
      "or API key of role member or higher that holds this screen's control lease.",
    tags: ["Screens"],
    request: {
      params: ScreenParams,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z
              .object({
                mode: z.enum(SCREEN_MODES),
                origin: EmbedOrigin.optional().openapi({
                  description:
                    "Bind the capability to one web origin: the proxy opens it only for a page of that origin. " +
                    "It must be one of the workspace's embed origins. Mint for the page that will use it.",
                }),
              })
              .openapi("ScreenCapabilityRequest"),
          },
        },
      },
    },
    responses: {
      201: json("Minted", CapabilitySchema),
      409: { description: "Control is not held by the caller, or the computer is not running" },
      422: { description: "The origin is not one of the workspace's embed origins (ORIGIN_NOT_LISTED)" },
    },
  },
);

const takeControl = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "takeScreenControl",
    method: "post",
    path: `${SCREEN_PATH}/control`,
    summary: "Take control of a screen",
    description:
      "One holder per screen; the lease expires unless renewed. Taking it again while holding it returns " +
      "the current lease. Viewers of the screen are unaffected. A person takes it to drive the screen " +
      "from the dashboard; an API key takes it for a page it embeds the screen in, then mints a `control` " +
      "capability for that page.",
    tags: ["Screens"],
    request: { params: ScreenParams },
    responses: {
      200: json("Already held by the caller", ControlLeaseSchema),
      201: json("Granted", ControlLeaseSchema),
      409: { description: "Someone else controls the screen, or the computer is not running" },
    },
  },
);

const currentControl = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getScreenControl",
    method: "get",
    path: `${SCREEN_PATH}/control`,
    summary: "Who controls a screen",
    tags: ["Screens"],
    request: { params: ScreenParams },
    responses: { 200: json("Controlled", CurrentControlSchema) },
  },
);

const renewControl = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "renewScreenControl",
    method: "post",
    path: `${SCREEN_PATH}/control/{leaseId}/renew`,
    summary: "Renew one's control lease",
    tags: ["Screens"],
    request: { params: LeaseParams },
    responses: {
      200: json("Renewed", ControlLeaseSchema),
      409: { description: "The lease has ended" },
    },
  },
);

const releaseControl = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "releaseScreenControl",
    method: "delete",
    path: `${SCREEN_PATH}/control/{leaseId}`,
    summary: "Release control (the holder), or revoke it (an admin or owner, signed in as a person)",
    description: "Names the lease, so a late release never ends a newer lease of the same screen.",
    tags: ["Screens"],
    request: { params: LeaseParams },
    responses: {
      204: { description: "Ended" },
      409: { description: "The lease has already ended" },
    },
  },
);

export function screenRoutes() {
  return createRouter()
    .openapi(mintCapability, async (c) => {
      const { index } = c.req.valid("param");
      const { mode, origin } = c.req.valid("json");
      const minted = await mintScreenCapability(c.var.deps, {
        principal: c.var.principal,
        access: c.var.workspace,
        computer: await computerOf(c),
        screen: index,
        mode,
        origin,
      });
      return c.json(
        {
          token: minted.token,
          expiresAt: iso(minted.expiresAt),
          mode,
          url: `${c.var.deps.env.screens.proxyPublicUrl.replace(/\/+$/, "")}${SOCKET_PATH}`,
          protocol: SCREEN_PROTOCOL,
          recorded: minted.recorded,
        },
        201,
      );
    })
    .openapi(takeControl, async (c) => {
      const deps = c.var.deps;
      const { index: screen } = c.req.valid("param");
      const computer = await computerOf(c);
      const caller = controller(c);
      const holder = holderOfCaller(caller);
      for (let attempt = 1; ; attempt++) {
        const held = await liveLease(deps.database.db, computer.id, screen);
        if (held) {
          const ours = isHeldBy(held, holder);
          // Idempotent for the same lease: makes sure its server still runs. After a lost attempt
          // our start may have replaced the holder's password, so it gets it back.
          if (ours || attempt > 1) await openControlFor(deps, computer, screen, held.id);
          if (!ours) throw controlHeld(held);
          return c.json(leaseBody(held), 200);
        }
        // The server starts first, so a lease never exists (and reaches proxies) without one.
        const id = randomUUID();
        await openControlFor(deps, computer, screen, id);
        try {
          const { lease } = await grantLease(deps, {
            id,
            workspaceId: computer.workspace_id,
            computerId: computer.id,
            screen,
            holder,
            actor: actorOf(caller),
            leaseMs: deps.env.screens.controlLeaseMs,
          });
          return c.json(leaseBody(lease), 201);
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
          // Someone took the screen at the same moment; our start replaced their server's password.
          const winner = await liveLease(deps.database.db, computer.id, screen);
          if (winner) {
            await openControlFor(deps, computer, screen, winner.id);
            if (isHeldBy(winner, holder)) return c.json(leaseBody(winner), 200);
            throw controlHeld(winner);
          }
          // The winner let go before we could name it: the screen is free again, so take it anew.
          if (attempt < TAKE_ATTEMPTS) continue;
          // It keeps changing hands: our password must not stay on a server nobody's lease owns.
          await closeControlUnlessHeld(deps, computer, screen);
          throw new HttpProblem(
            409,
            "CONTROL_HELD",
            `Screen ${screen} changed hands while it was being taken; try again.`,
          );
        }
      }
    })
    .openapi(currentControl, async (c) => {
      const { index: screen } = c.req.valid("param");
      const computer = await computerOf(c);
      const lease = await liveLease(c.var.deps.database.db, computer.id, screen);
      if (!lease) throw new HttpProblem(404, "CONTROL_LEASE_NOT_FOUND", `Nobody controls screen ${screen}.`);
      return c.json(
        {
          leaseId: lease.id,
          holder: { type: lease.holder_type, id: lease.holder_id, name: lease.holder_name },
          expiresAt: iso(lease.expires_at),
        },
        200,
      );
    })
    .openapi(renewControl, async (c) => {
      const deps = c.var.deps;
      const { index: screen, leaseId } = c.req.valid("param");
      const computer = await computerOf(c);
      const caller = controller(c);
      const lease = await leaseOnScreen(deps.database.db, leaseId, computer.id, screen);
      if (!lease) throw notFound("control lease");
      if (!isHeldBy(lease, holderOfCaller(caller))) throw notHolder();
      const renewed = await renewLease(
        deps,
        leaseId,
        holderOfCaller(caller),
        actorOf(caller),
        deps.env.screens.controlLeaseMs,
      );
      if (!renewed) throw leaseEnded();
      return c.json(leaseBody(renewed), 200);
    })
    .openapi(releaseControl, async (c) => {
      const deps = c.var.deps;
      const { index: screen, leaseId } = c.req.valid("param");
      const computer = await computerOf(c);
      const caller = controller(c);
      const lease = await leaseOnScreen(deps.database.db, leaseId, computer.id, screen);
      if (!lease) throw notFound("control lease");
      const reason = isHeldBy(lease, holderOfCaller(caller)) ? "released" : "revoked";
      // taking control away from someone is a person's decision, however strong a key's role
      if (reason === "revoked" && (caller.kind !== "user" || !hasRole(c.var.workspace.role, "admin")))
        throw notHolder();
      if (!isLive(lease)) throw leaseEnded();
      const ended = await endLease(deps, leaseId, reason, actorOf(caller));
      if (!ended) throw leaseEnded();
      await closeControlUnlessHeld(deps, computer, screen);
      return c.body(null, 204);
    });
}

/** Takes that lose the screen to a holder who has already let go again, before the caller is told to retry. */
const TAKE_ATTEMPTS = 3;

const computerOf = (c: Context<AppEnv>) =>
  requireComputer(c.var.deps.database.db, c.var.workspace.workspaceId, c.req.param("computerId") ?? "");

/** A person or an API key: the routes' guard has already turned everyone else away. */
function controller(c: Context<AppEnv>) {
  const principal = c.var.principal;
  if (principal.kind === "anonymous") throw new Error("control routes are guarded");
  return principal;
}

const leaseBody = (lease: { id: string; fence: number; expires_at: Date; screen_index: number }) => ({
  leaseId: lease.id,
  fence: lease.fence,
  expiresAt: iso(lease.expires_at),
  screen: lease.screen_index,
});

const controlHeld = (lease: LiveLease) =>
  new HttpProblem(
    409,
    "CONTROL_HELD",
    `${describeControlHolder(lease)} controls screen ${lease.screen_index} until ${iso(lease.expires_at)}.`,
  );

const notHolder = () =>
  new HttpProblem(
    403,
    "NOT_LEASE_HOLDER",
    "Only the holder may do this (an admin or owner, signed in as a person, may revoke).",
  );

const leaseEnded = () => new HttpProblem(409, "LEASE_ENDED", "That control lease has already ended.");
