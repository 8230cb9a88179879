import { COMPUTER_STATES, type Computer } from "@cubicle/db";
import { computersDisabled, movesOnNextStart, PROVIDER_KINDS } from "@cubicle/providers";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { describedPolicy, EgressPolicySchema, effectivePolicy, workspacePolicy } from "../egress/policy.ts";
import { iso, isoOrNull } from "../http/iso.ts";
import { jsonResponse as json } from "../http/openapi.ts";
import { ComputerParams, WorkspaceIdParam } from "../http/params.ts";
import { createRouter } from "../http/router.ts";
import { COMPUTERS, computerOf, PROVIDER_PROBLEMS } from "./http.ts";
import { destroyComputer, ensureRunning, stopComputer, touchComputer } from "./lifecycle.ts";
import { computerBusy, openSessions, screensControlled, screensInUse } from "./occupancy.ts";

const Named = z.object({ id: z.string(), name: z.string() });

const ComputerSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    scope: z
      .enum(["team", "bot"])
      .openapi({ description: "The Team Computer, or one bot's Private Computer." }),
    bot: Named.extend({ archived: z.boolean() })
      .nullable()
      .openapi({ description: "The bot whose Private Computer it is." }),
    homeKey: z.string(),
    state: z.enum(COMPUTER_STATES),
    stateDetail: z.string().nullable().openapi({ description: "Why it is in `error`." }),
    providerKind: z.string().openapi({ description: "The provider that runs (or last ran) its machine." }),
    effectiveProvider: z.enum(PROVIDER_KINDS).openapi({
      description: "The provider new machines get now; a start moves the computer to it if they differ.",
    }),
    movesOnNextStart: z.boolean().openapi({
      description:
        "Its machine ran on another provider than the effective one: the next start moves it there, restored from its latest checkpoint.",
    }),
    computersDisabled: z.boolean().openapi({
      description:
        "The effective provider runs no computers (SANDBOX_PROVIDER is none, or a remote provider has no key).",
    }),
    lastActivityAt: z.string().datetime().nullable(),
    egress: EgressPolicySchema.extend({
      inherited: z.boolean().openapi({ description: "The workspace's policy, for want of its own." }),
    }).openapi({
      description:
        "Where its programs may open connections (what its provider enforces: the egress-policy route).",
    }),
    sessions: z
      .array(
        z.object({
          id: z.string(),
          fence: z.number().int(),
          bot: Named,
          expiresAt: z.string().datetime(),
        }),
      )
      .openapi({ description: "Open sessions on it." }),
    screens: z
      .array(z.object({ index: z.number().int(), bot: Named, sessionId: z.string().nullable() }))
      .openapi({ description: "Screens in use, and by which bot." }),
    control: z
      .array(
        z.object({
          index: z.number().int(),
          leaseId: z.string(),
          holder: Named.extend({ type: z.enum(["user", "api_key"]) }),
          expiresAt: z.string().datetime(),
        }),
      )
      .openapi({
        description: "Screens someone controls: a person, or an API key for a page that embeds the screen.",
      }),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Computer");

const listComputers = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "listComputers",
    method: "get",
    path: COMPUTERS,
    summary: "Computers of the workspace",
    description: "Computers are made on first use: the Team Computer, and each Private bot's own.",
    tags: ["Computers"],
    request: { params: WorkspaceIdParam },
    responses: { 200: json("OK", z.object({ items: z.array(ComputerSchema) }).openapi("ComputerList")) },
  },
);

const getComputer = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getComputer",
    method: "get",
    path: `${COMPUTERS}/{computerId}`,
    summary: "One computer: state, provider, who uses which screen, who controls which",
    tags: ["Computers"],
    request: { params: ComputerParams },
    responses: { 200: json("OK", ComputerSchema) },
  },
);

const startComputer = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "startComputer",
    method: "post",
    path: `${COMPUTERS}/{computerId}/start`,
    summary: "Start (or resume) a computer",
    description:
      "Resumes its machine when the provider still has it; otherwise a fresh machine is made on the " +
      "provider in effect, on the same home. Starting a running computer only counts as activity.",
    tags: ["Computers"],
    request: { params: ComputerParams },
    responses: { 200: json("Running", ComputerSchema), ...PROVIDER_PROBLEMS },
  },
);

const heartbeatRoute = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "heartbeatComputer",
    method: "post",
    path: `${COMPUTERS}/{computerId}/heartbeat`,
    summary: "Say the computer is being watched",
    description:
      "A dashboard showing the computer calls this now and then, so that a computer someone is " +
      "looking at is not suspended as idle (SANDBOX_IDLE_MS).",
    tags: ["Computers"],
    request: { params: ComputerParams },
    responses: { 204: { description: "Counted as activity" } },
  },
);

const stopRoute = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "stopComputer",
    method: "post",
    path: `${COMPUTERS}/{computerId}/stop`,
    summary: "Stop a computer (its machine stops; the home stays)",
    description:
      "Refused with COMPUTER_BUSY while sessions are open on it or bots hold its screens (there is no " +
      "force: end the sessions, or let them expire). Stopping a stopped computer changes nothing.",
    tags: ["Computers"],
    request: { params: ComputerParams },
    responses: { 200: json("Stopped", ComputerSchema), ...PROVIDER_PROBLEMS },
  },
);

const destroyRoute = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "destroyComputer",
    method: "post",
    path: `${COMPUTERS}/{computerId}/destroy`,
    summary: "Destroy a computer's machine (the home and the computer record stay)",
    description:
      "The machine is removed and the next start makes a fresh one on the same home. Refused with " +
      "COMPUTER_BUSY while sessions are open on it, like stop.",
    tags: ["Computers"],
    request: { params: ComputerParams },
    responses: { 200: json("Destroyed", ComputerSchema), ...PROVIDER_PROBLEMS },
  },
);

export function computerRoutes() {
  return createRouter()
    .openapi(listComputers, async (c) => {
      const computers = await c.var.deps.database.db
        .selectFrom("computers")
        .selectAll()
        .where("workspace_id", "=", c.var.workspace.workspaceId)
        // The Team Computer first, then Private ones by age.
        .orderBy("bot_id", (ob) => ob.nullsFirst())
        .orderBy("created_at")
        .execute();
      return c.json({ items: await views(c, computers) }, 200);
    })
    .openapi(getComputer, async (c) => c.json(await view(c, await computerOf(c)), 200))
    .openapi(startComputer, async (c) => {
      const { computer } = await ensureRunning(c.var.deps, await computerOf(c), actorOf(c.var.principal));
      return c.json(await view(c, computer), 200);
    })
    .openapi(heartbeatRoute, async (c) => {
      await touchComputer(c.var.deps, (await computerOf(c)).id);
      return c.body(null, 204);
    })
    .openapi(stopRoute, async (c) => {
      const computer = await idleComputer(c);
      const stopped = await stopComputer(c.var.deps, computer, actorOf(c.var.principal), "manual");
      return c.json(await view(c, stopped), 200);
    })
    .openapi(destroyRoute, async (c) => {
      const computer = await idleComputer(c);
      const destroyed = await destroyComputer(c.var.deps, computer, actorOf(c.var.principal));
      return c.json(await view(c, destroyed), 200);
    });
}

async function idleComputer(c: Context<AppEnv>): Promise<Computer> {
  const computer = await computerOf(c);
  const busy = await computerBusy(c.var.deps.database.db, computer.id);
  if (busy) throw busy;
  return computer;
}

async function view(c: Context<AppEnv>, computer: Computer) {
  const [one] = await views(c, [computer]);
  if (!one) throw new Error("a computer without its view");
  return one;
}

async function views(c: Context<AppEnv>, computers: Computer[]): Promise<z.infer<typeof ComputerSchema>[]> {
  if (computers.length === 0) return [];
  const db = c.var.deps.database.db;
  const computerIds = computers.map((computer) => computer.id);
  const botIds = computers.flatMap((computer) => (computer.bot_id ? [computer.bot_id] : []));
  const [choice, workspaceEgress, sessions, screens, control, bots] = await Promise.all([
    c.var.deps.sandbox.choice(),
    // every computer listed is of the route's workspace
    workspacePolicy(db, c.var.workspace.workspaceId),
    openSessions(db, { computerIds }),
    screensInUse(db, { computerIds }),
    screensControlled(db, computerIds),
    botIds.length === 0
      ? []
      : db.selectFrom("bots").select(["id", "name", "archived_at"]).where("id", "in", botIds).execute(),
  ]);
  return computers.map((computer) => {
    const bot = bots.find((b) => b.id === computer.bot_id);
    const of = <T extends { computerId: string }>(rows: T[]) =>
      rows.filter((row) => row.computerId === computer.id);
    return {
      id: computer.id,
      workspaceId: computer.workspace_id,
      scope: computer.bot_id ? "bot" : "team",
      bot: bot ? { id: bot.id, name: bot.name, archived: bot.archived_at !== null } : null,
      homeKey: computer.home_key,
      state: computer.state,
      stateDetail: computer.state_detail,
      providerKind: computer.provider_kind,
      effectiveProvider: choice.effective,
      movesOnNextStart: movesOnNextStart(computer.provider_kind, choice.effective),
      computersDisabled: computersDisabled(choice.effective),
      lastActivityAt: isoOrNull(computer.last_activity_at),
      egress: describedPolicy(effectivePolicy(computer, workspaceEgress)),
      sessions: of(sessions).map((s) => ({
        id: s.id,
        fence: s.fence,
        bot: { id: s.botId, name: s.botName },
        expiresAt: iso(s.expiresAt),
      })),
      screens: of(screens).map((s) => ({
        index: s.index,
        bot: { id: s.botId, name: s.botName },
        sessionId: s.sessionId,
      })),
      control: of(control).map((s) => ({
        index: s.index,
        leaseId: s.leaseId,
        holder: { type: s.holderType, id: s.holderId, name: s.holderName },
        expiresAt: iso(s.expiresAt),
      })),
      createdAt: iso(computer.created_at),
      updatedAt: iso(computer.updated_at),
    };
  });
}
