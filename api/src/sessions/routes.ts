import type { Bot, Computer } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { hasRole } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import { requireBot } from "../bots/repository.ts";
import { computerForBot, ensureRunning, touchComputer } from "../computers/lifecycle.ts";
import type { Machine } from "../computers/repository.ts";
import { jsonResponse as json } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { ensureStartFolder, sessionPaths } from "../tools/paths.ts";
import { toolRoutes } from "../tools/routes.ts";
import { computerBusy, holderOf, holds, notHolder, requireSession, staleFence } from "./access.ts";
import {
  BotChanged,
  endLease,
  findSession,
  isUniqueViolation,
  liveSessionOfBot,
  liveSessions,
  openLease,
  renewLease,
} from "./leases.ts";
import {
  BotParams,
  FENCE_DESCRIPTION,
  FenceHeaders,
  SessionParams,
  SessionSchema,
  sessionBody,
} from "./schemas.ts";

const SESSIONS_PATH = "/v1/workspaces/{workspaceId}/bots/{botId}/sessions";
const SESSION_PATH = `${SESSIONS_PATH}/{sessionId}`;

const botArchived = (bot: Bot) =>
  new HttpProblem(409, "BOT_ARCHIVED", `Bot ${bot.name} is archived; it cannot start sessions.`);

const openSession = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "openSession",
    method: "post",
    path: SESSIONS_PATH,
    summary: "Open a computer-use session for a bot",
    description:
      "One open session per bot: while another one is open and not expired this answers 409 " +
      "`COMPUTER_BUSY`, naming its holder; a session that stopped heartbeating is reclaimed and the new " +
      "one gets a higher fence. Opening starts (or resumes) the bot's computer and, on a graphical " +
      "computer, leases the session a screen: the lowest free index 0–7 of a Team Computer, screen 0 of a " +
      "Private one, or none (`screen: null`) when all are taken. The session lasts `SESSION_LEASE_MS` " +
      `past its last heartbeat. ${FENCE_DESCRIPTION}`,
    tags: ["Sessions"],
    request: { params: BotParams },
    responses: {
      201: json("Opened", SessionSchema),
      409: { description: "The bot has an open session (`COMPUTER_BUSY`) or is archived (`BOT_ARCHIVED`)" },
    },
  },
);

const getSession = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getSession",
    method: "get",
    path: SESSION_PATH,
    summary: "A session of a bot",
    tags: ["Sessions"],
    request: { params: SessionParams },
    responses: { 200: json("The session", SessionSchema) },
  },
);

const heartbeat = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "heartbeatSession",
    method: "post",
    path: `${SESSION_PATH}/heartbeat`,
    summary: "Keep a session (and its screen) alive",
    description: `Extends the session to \`SESSION_LEASE_MS\` from now. Only its holder may. ${FENCE_DESCRIPTION}`,
    tags: ["Sessions"],
    request: { params: SessionParams, headers: FenceHeaders },
    responses: {
      200: json("Extended", SessionSchema),
      409: { description: "The fence is stale (`STALE_FENCE`)" },
    },
  },
);

const endSession = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "endSession",
    method: "post",
    path: `${SESSION_PATH}/end`,
    summary: "End a session with its outcome",
    description:
      "Releases the bot and its screen. The holder ends its own session; an admin or owner may end " +
      `anyone's. ${FENCE_DESCRIPTION}`,
    tags: ["Sessions"],
    request: {
      params: SessionParams,
      headers: FenceHeaders,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.object({ outcome: z.enum(["success", "failure"]) }).openapi("SessionEnd"),
          },
        },
      },
    },
    responses: {
      200: json("Ended", SessionSchema),
      409: { description: "The fence is stale (`STALE_FENCE`)" },
    },
  },
);

const listSessions = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "listSessions",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/sessions",
    summary: "Open sessions of the workspace",
    description: "Sessions that are open and not expired, oldest first.",
    tags: ["Sessions"],
    request: {
      params: WorkspaceIdParam,
      query: z.object({ botId: z.string().min(1).max(64).optional() }),
    },
    responses: {
      200: json("Open sessions", z.object({ items: z.array(SessionSchema) }).openapi("SessionList")),
    },
  },
);

export function sessionRoutes() {
  return createRouter()
    .openapi(openSession, async (c) => {
      const deps = c.var.deps;
      const db = deps.database.db;
      const { botId } = c.req.valid("param");
      const actor = actorOf(c.var.principal);
      const { capabilities } = await deps.sandbox.current();
      let opened: Awaited<ReturnType<typeof openLease>>;
      let bot: Bot;
      let computer: Computer;
      let machine: Machine;
      // A bot that switches computers meanwhile makes the lease's computer wrong: look again.
      for (let attempt = 1; ; attempt++) {
        bot = await requireBot(db, c.var.workspace.workspaceId, botId);
        if (bot.archived_at !== null) throw botArchived(bot);
        // Answered before the computer is touched; the database decides for real below.
        const held = await liveSessionOfBot(db, bot.id);
        if (held) throw computerBusy(bot, held);
        computer = await computerForBot(deps, bot);
        // The machine runs before the lease starts, so its time counts from when it is usable.
        ({ machine } = await ensureRunning(deps, computer, actor));
        await ensureStartFolder(machine, sessionPaths(computer, bot.id));
        try {
          opened = await openLease(deps, {
            workspaceId: bot.workspace_id,
            botId: bot.id,
            computerId: computer.id,
            computerScope: computer.bot_id === null ? "team" : "private",
            screens: capabilities.graphical ? capabilities.maxScreens : 0,
            holder: holderOf(c.var.principal),
            actor,
            leaseMs: deps.env.sessions.leaseMs,
          });
          break;
        } catch (error) {
          if (error instanceof BotChanged) {
            if (error.archived) throw botArchived(bot);
            if (attempt < 3) continue;
            throw new HttpProblem(409, "BOT_SWITCHING", `Bot ${bot.name} is switching computers; try again.`);
          }
          if (!isUniqueViolation(error)) throw error;
          // Someone opened a session for the bot at the same moment.
          const winner = await liveSessionOfBot(db, bot.id);
          if (!winner) throw error;
          throw computerBusy(bot, winner);
        }
      }

      const { lease, screen } = opened;
      if (screen) {
        // The screen runs while its session does: the display exists for commands, viewers can watch.
        try {
          await machine.provider.openScreen(machine.ref, screen.screen_index);
        } catch (error) {
          await endLease(deps, lease.id, lease.fence, "failure", actor).catch(() => undefined);
          throw error;
        }
      }
      const session = await findSession(db, bot.workspace_id, lease.id);
      if (!session) throw new Error(`session ${lease.id} vanished right after it was opened`);
      // at once rather than at the next sweep, so the recording misses as little of the session as can be
      if (screen) deps.sessionRecorders.start(session.id);
      return c.json(sessionBody(session), 201);
    })
    .openapi(getSession, async (c) => {
      const { botId, sessionId } = c.req.valid("param");
      const session = await requireSession(
        c.var.deps.database.db,
        c.var.workspace.workspaceId,
        botId,
        sessionId,
      );
      return c.json(sessionBody(session), 200);
    })
    .openapi(heartbeat, async (c) => {
      const deps = c.var.deps;
      const db = deps.database.db;
      const { botId, sessionId } = c.req.valid("param");
      const fence = c.req.valid("header")["x-session-fence"];
      const session = await requireSession(db, c.var.workspace.workspaceId, botId, sessionId);
      if (!holds(c.var.principal, session)) throw notHolder(session);
      const renewed = await renewLease(
        deps,
        session.id,
        fence,
        actorOf(c.var.principal),
        deps.env.sessions.leaseMs,
      );
      if (!renewed) throw await staleFence(db, session, fence);
      await touchComputer(deps, session.computer_id);
      return c.json(sessionBody({ ...session, ...renewed, effective_status: "open" }), 200);
    })
    .openapi(endSession, async (c) => {
      const deps = c.var.deps;
      const db = deps.database.db;
      const { botId, sessionId } = c.req.valid("param");
      const fence = c.req.valid("header")["x-session-fence"];
      const { outcome } = c.req.valid("json");
      const session = await requireSession(db, c.var.workspace.workspaceId, botId, sessionId);
      if (!holds(c.var.principal, session) && !hasRole(c.var.workspace.role, "admin"))
        throw notHolder(session);
      const actor = actorOf(c.var.principal);
      const ended = await endLease(deps, session.id, fence, outcome, actor);
      if (!ended) throw await staleFence(db, session, fence);
      await touchComputer(deps, session.computer_id);
      deps.checkpoints.afterSession({ computerId: session.computer_id, outcome, actor });
      return c.json(sessionBody({ ...session, ...ended, effective_status: "ended" }), 200);
    })
    .openapi(listSessions, async (c) => {
      const { botId } = c.req.valid("query");
      const items = await liveSessions(c.var.deps.database.db, c.var.workspace.workspaceId, botId);
      return c.json({ items: items.map(sessionBody) }, 200);
    })
    .route("/", toolRoutes());
}
