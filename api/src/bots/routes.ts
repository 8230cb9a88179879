import type { Bot, ComputerMode, Database } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type Kysely, sql } from "kysely";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import { computerForBot } from "../computers/lifecycle.ts";
import { botBusy } from "../computers/occupancy.ts";
import type { AppEnv } from "../context.ts";
import { iso, isoOrNull } from "../http/iso.ts";
import { jsonResponse as json } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { isUniqueViolation } from "../screens/control-leases.ts";
import { type BotState, botStates, lockBot, nameTaken, requireBot } from "./repository.ts";

const COMPUTER_MODES = ["team", "private"] as const satisfies readonly ComputerMode[];

const BotName = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .regex(/^[^\p{Cc}]+$/u, "no control characters");
const CharterText = z.string().trim().max(2_000);

const CharterSchema = z
  .object({
    purpose: z.string().openapi({ description: "What the bot does." }),
    boundary: z.string().openapi({ description: "The boundary it never crosses." }),
    privacyReason: z
      .string()
      .openapi({ description: "Why it is private; required (non-empty) while it has a Private Computer." }),
  })
  .openapi("BotCharter");

const SessionSchema = z
  .object({
    id: z.string(),
    fence: z.number().int(),
    computerId: z.string(),
    holder: z.object({ type: z.enum(["user", "api_key"]), id: z.string() }),
    heartbeatAt: z.string().datetime(),
    expiresAt: z.string().datetime(),
  })
  .openapi("BotSession");

const BotSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    name: z.string(),
    charter: CharterSchema,
    computerMode: z.enum(COMPUTER_MODES),
    computerId: z.string().nullable().openapi({
      description: "The computer the bot works on in its mode (the Team Computer, or its own Private one).",
    }),
    status: z.enum(["idle", "busy", "archived"]).openapi({
      description:
        "`busy`: it has an open session or holds a screen; `archived`: retired, kept for the record.",
    }),
    session: SessionSchema.nullable().openapi({ description: "Its open session, if any." }),
    archivedAt: z.string().datetime().nullable(),
    createdBy: z.string().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Bot");

const PRIVACY_REASON_REQUIRED = "a Private bot needs a reason to be private";

const CreateBotSchema = z
  .object({
    name: BotName,
    charter: z.object({
      purpose: CharterText.min(1),
      boundary: CharterText.min(1),
      privacyReason: CharterText.default(""),
    }),
    computerMode: z.enum(COMPUTER_MODES).default("team"),
  })
  .superRefine((bot, ctx) => {
    if (bot.computerMode === "private" && bot.charter.privacyReason === "")
      ctx.addIssue({ code: "custom", path: ["charter", "privacyReason"], message: PRIVACY_REASON_REQUIRED });
  })
  .openapi("CreateBot");

const UpdateBotSchema = z
  .object({
    name: BotName.optional(),
    charter: z
      .object({
        purpose: CharterText.min(1).optional(),
        boundary: CharterText.min(1).optional(),
        privacyReason: CharterText.optional(),
      })
      .optional(),
  })
  .refine((body) => body.name !== undefined || body.charter !== undefined, "name or charter is required")
  .openapi("UpdateBot");

const SwitchModeSchema = z
  .object({
    computerMode: z.enum(COMPUTER_MODES),
    privacyReason: CharterText.optional().openapi({
      description: "Sets the charter's reason to be private; needed when switching to private without one.",
    }),
  })
  .openapi("SwitchBotMode");

const BotParams = WorkspaceIdParam.extend({
  botId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "botId", in: "path" } }),
});

const body = <T extends z.ZodType>(schema: T) => ({
  body: { required: true, content: { "application/json": { schema } } },
});

const BOTS = "/v1/workspaces/{workspaceId}/bots";

const createBot = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "createBot",
    method: "post",
    path: BOTS,
    summary: "Create a bot",
    description:
      "A bot works on the workspace's Team Computer unless created `private`, which gives it its own " +
      "Private Computer and needs `charter.privacyReason`.",
    tags: ["Bots"],
    request: { params: WorkspaceIdParam, ...body(CreateBotSchema) },
    responses: {
      201: json("Created", BotSchema),
      409: { description: "A live bot of the workspace has that name (BOT_NAME_TAKEN)" },
    },
  },
);

const listBots = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "listBots",
    method: "get",
    path: BOTS,
    summary: "Bots of the workspace, by name",
    tags: ["Bots"],
    request: {
      params: WorkspaceIdParam,
      query: z.object({
        includeArchived: z
          .enum(["true", "false"])
          .default("false")
          .transform((value) => value === "true")
          .openapi({ description: "Archived bots are left out unless this is true." }),
      }),
    },
    responses: { 200: json("OK", z.object({ items: z.array(BotSchema) }).openapi("BotList")) },
  },
);

const getBot = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getBot",
    method: "get",
    path: `${BOTS}/{botId}`,
    summary: "One bot (archived ones too)",
    tags: ["Bots"],
    request: { params: BotParams },
    responses: { 200: json("OK", BotSchema) },
  },
);

const updateBot = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "updateBot",
    method: "patch",
    path: `${BOTS}/{botId}`,
    summary: "Rename a bot or change its charter",
    description: "Charter fields not sent are kept. A Private bot keeps a non-empty reason to be private.",
    tags: ["Bots"],
    request: { params: BotParams, ...body(UpdateBotSchema) },
    responses: {
      200: json("Updated", BotSchema),
      409: { description: "The name is taken (BOT_NAME_TAKEN), or the bot is archived (BOT_ARCHIVED)" },
    },
  },
);

const switchMode = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "switchBotMode",
    method: "post",
    path: `${BOTS}/{botId}/mode`,
    summary: "Move a bot between the Team Computer and its own Private Computer",
    description:
      "Refused while the bot has an open session or holds a screen. Nothing is deleted: a Private bot's " +
      "computer and home stay, and are used again when it switches back.",
    tags: ["Bots"],
    request: { params: BotParams, ...body(SwitchModeSchema) },
    responses: {
      200: json("Switched (or already in that mode)", BotSchema),
      409: { description: "The bot is busy (BOT_BUSY) or archived (BOT_ARCHIVED)" },
    },
  },
);

const archiveBot = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "archiveBot",
    method: "post",
    path: `${BOTS}/{botId}/archive`,
    summary: "Archive a bot",
    description:
      "It leaves the bot list (see `includeArchived`) and frees its name; its record, computer and home " +
      "are kept. Refused while it has an open session or holds a screen. Archiving again changes nothing.",
    tags: ["Bots"],
    request: { params: BotParams },
    responses: {
      200: json("Archived", BotSchema),
      409: { description: "The bot is busy (BOT_BUSY)" },
    },
  },
);

export function botRoutes() {
  return createRouter()
    .openapi(createBot, async (c) => {
      const deps = c.var.deps;
      const input = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      const bot = await named(input.name, async () =>
        deps.database.db.transaction().execute(async (trx) => {
          if (await nameTaken(trx, workspaceId, input.name)) throw botNameTaken(input.name);
          const row = await trx
            .insertInto("bots")
            .values({
              workspace_id: workspaceId,
              name: input.name,
              charter_purpose: input.charter.purpose,
              charter_boundary: input.charter.boundary,
              charter_privacy_reason: input.charter.privacyReason,
              computer_mode: input.computerMode,
              created_by: c.var.principal.kind === "user" ? c.var.principal.userId : null,
            })
            .returningAll()
            .executeTakeFirstOrThrow();
          await audited(c, trx, "bot.created", row, { name: row.name, computerMode: row.computer_mode });
          return row;
        }),
      );
      // The record of the computer it will work on (not its machine), so the bot can name it.
      await computerForBot(deps, bot);
      return c.json(await viewOf(c, bot), 201);
    })
    .openapi(listBots, async (c) => {
      const { includeArchived } = c.req.valid("query");
      let query = c.var.deps.database.db
        .selectFrom("bots")
        .selectAll()
        .where("workspace_id", "=", c.var.workspace.workspaceId)
        .orderBy(sql`lower(name)`)
        .orderBy("created_at");
      if (!includeArchived) query = query.where("archived_at", "is", null);
      const states = await botStates(c.var.deps.database.db, await query.execute());
      return c.json({ items: states.map(toBot) }, 200);
    })
    .openapi(getBot, async (c) => {
      const { botId } = c.req.valid("param");
      const bot = await requireBot(c.var.deps.database.db, c.var.workspace.workspaceId, botId);
      return c.json(await viewOf(c, bot), 200);
    })
    .openapi(updateBot, async (c) => {
      const { botId } = c.req.valid("param");
      const input = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      const bot = await named(input.name ?? "", () =>
        c.var.deps.database.db.transaction().execute(async (trx) => {
          const current = await lockBot(trx, workspaceId, botId);
          if (current.archived_at) throw botArchived(current);
          const next = {
            name: input.name ?? current.name,
            charter_purpose: input.charter?.purpose ?? current.charter_purpose,
            charter_boundary: input.charter?.boundary ?? current.charter_boundary,
            charter_privacy_reason: input.charter?.privacyReason ?? current.charter_privacy_reason,
          };
          if (current.computer_mode === "private" && next.charter_privacy_reason === "")
            throw privacyReasonRequired("json.charter.privacyReason");
          const changed = (Object.keys(next) as (keyof typeof next)[]).filter(
            (field) => next[field] !== current[field],
          );
          if (changed.length === 0) return current;
          if (next.name !== current.name && (await nameTaken(trx, workspaceId, next.name, botId)))
            throw botNameTaken(next.name);
          const row = await trx
            .updateTable("bots")
            .set({ ...next, updated_at: sql`now()` })
            .where("id", "=", botId)
            .returningAll()
            .executeTakeFirstOrThrow();
          await audited(c, trx, "bot.updated", row, {
            name: row.name,
            changed,
            ...(changed.includes("name") ? { previousName: current.name } : {}),
          });
          return row;
        }),
      );
      return c.json(await viewOf(c, bot), 200);
    })
    .openapi(switchMode, async (c) => {
      const deps = c.var.deps;
      const { botId } = c.req.valid("param");
      const { computerMode, privacyReason } = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      const before = await requireBot(deps.database.db, workspaceId, botId);
      // The record of the computer it moves to, made first: the switch then names it.
      const computer = before.archived_at
        ? null
        : await computerForBot(deps, { ...before, computer_mode: computerMode });
      const bot = await deps.database.db.transaction().execute(async (trx) => {
        const current = await lockBot(trx, workspaceId, botId);
        if (current.archived_at || !computer) throw botArchived(current);
        const reason = privacyReason ?? current.charter_privacy_reason;
        if (computerMode === "private" && reason === "") throw privacyReasonRequired("json.privacyReason");
        if (current.computer_mode === computerMode && reason === current.charter_privacy_reason)
          return current;
        if (current.computer_mode !== computerMode) {
          const busy = await botBusy(trx, botId);
          if (busy) throw busy;
        }
        const row = await trx
          .updateTable("bots")
          .set({ computer_mode: computerMode, charter_privacy_reason: reason, updated_at: sql`now()` })
          .where("id", "=", botId)
          .returningAll()
          .executeTakeFirstOrThrow();
        if (current.computer_mode !== computerMode) {
          await audited(c, trx, "bot.mode_switched", row, {
            name: row.name,
            from: current.computer_mode,
            to: computerMode,
            computerId: computer.id,
          });
        } else {
          await audited(c, trx, "bot.updated", row, { name: row.name, changed: ["charter_privacy_reason"] });
        }
        return row;
      });
      return c.json(await viewOf(c, bot), 200);
    })
    .openapi(archiveBot, async (c) => {
      const { botId } = c.req.valid("param");
      const { workspaceId } = c.var.workspace;
      const bot = await c.var.deps.database.db.transaction().execute(async (trx) => {
        const current = await lockBot(trx, workspaceId, botId);
        if (current.archived_at) return current;
        const busy = await botBusy(trx, botId);
        if (busy) throw busy;
        const row = await trx
          .updateTable("bots")
          .set({ archived_at: sql`now()`, updated_at: sql`now()` })
          .where("id", "=", botId)
          .returningAll()
          .executeTakeFirstOrThrow();
        await audited(c, trx, "bot.archived", row, { name: row.name, computerMode: row.computer_mode });
        return row;
      });
      return c.json(await viewOf(c, bot), 200);
    });
}

async function viewOf(c: Context<AppEnv>, bot: Bot) {
  const [state] = await botStates(c.var.deps.database.db, [bot]);
  if (!state) throw new Error("a bot without its state");
  return toBot(state);
}

function toBot({ bot, computerId, session, busy }: BotState): z.infer<typeof BotSchema> {
  return {
    id: bot.id,
    workspaceId: bot.workspace_id,
    name: bot.name,
    charter: {
      purpose: bot.charter_purpose,
      boundary: bot.charter_boundary,
      privacyReason: bot.charter_privacy_reason,
    },
    computerMode: bot.computer_mode,
    computerId,
    status: bot.archived_at ? "archived" : busy ? "busy" : "idle",
    session: session && {
      id: session.id,
      fence: session.fence,
      computerId: session.computerId,
      holder: { type: session.holderType, id: session.holderId },
      heartbeatAt: iso(session.heartbeatAt),
      expiresAt: iso(session.expiresAt),
    },
    archivedAt: isoOrNull(bot.archived_at),
    createdBy: bot.created_by,
    createdAt: iso(bot.created_at),
    updatedAt: iso(bot.updated_at),
  };
}

/** Turns the database's verdict on a name (a concurrent request took it) into the same 409. */
async function named<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw botNameTaken(name);
    throw error;
  }
}

const botNameTaken = (name: string) =>
  new HttpProblem(409, "BOT_NAME_TAKEN", `A bot named "${name}" already exists in this workspace.`);

const botArchived = (bot: Bot) =>
  new HttpProblem(409, "BOT_ARCHIVED", `Bot ${bot.name} is archived; archived bots do not change.`);

const privacyReasonRequired = (path: string) =>
  new HttpProblem(400, "VALIDATION_FAILED", "The json is not valid.", [
    { path, message: PRIVACY_REASON_REQUIRED },
  ]);

function audited(
  c: Context<AppEnv>,
  db: Kysely<Database>,
  action: string,
  bot: Bot,
  data: Record<string, unknown>,
): Promise<void> {
  return c.var.deps.audit.record(
    {
      actor: actorOf(c.var.principal),
      workspaceId: bot.workspace_id,
      action,
      target: { type: "bot", id: bot.id },
      data,
    },
    db,
  );
}
