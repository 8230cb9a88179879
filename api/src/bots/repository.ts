import type { Bot, Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import { botScopeKey, teamScopeKey } from "../computers/lifecycle.ts";
import { type OpenSession, openSessions, screensInUse } from "../computers/occupancy.ts";
import { notFound } from "../http/problem.ts";

export function findBot(db: Kysely<Database>, workspaceId: string, botId: string): Promise<Bot | undefined> {
  return db
    .selectFrom("bots")
    .selectAll()
    .where("id", "=", botId)
    .where("workspace_id", "=", workspaceId)
    .executeTakeFirst();
}

/** Another workspace's bot answers exactly like a missing one. */
export async function requireBot(db: Kysely<Database>, workspaceId: string, botId: string): Promise<Bot> {
  const bot = await findBot(db, workspaceId, botId);
  if (!bot) throw notFound("bot");
  return bot;
}

/** The bot row, locked until the transaction ends (mode switches and archival serialize on it). */
export async function lockBot(trx: Kysely<Database>, workspaceId: string, botId: string): Promise<Bot> {
  const bot = await trx
    .selectFrom("bots")
    .selectAll()
    .where("id", "=", botId)
    .where("workspace_id", "=", workspaceId)
    .forUpdate()
    .executeTakeFirst();
  if (!bot) throw notFound("bot");
  return bot;
}

/** Whether a live (not archived) bot of the workspace already has this name, in any letter case. */
export async function nameTaken(
  db: Kysely<Database>,
  workspaceId: string,
  name: string,
  exceptBotId?: string,
): Promise<boolean> {
  let query = db
    .selectFrom("bots")
    .select("id")
    .where("workspace_id", "=", workspaceId)
    .where("archived_at", "is", null)
    .where((eb) => eb(eb.fn("lower", ["name"]), "=", name.toLowerCase()));
  if (exceptBotId) query = query.where("id", "<>", exceptBotId);
  return (await query.executeTakeFirst()) !== undefined;
}

/** A bot with what is happening to it now: the computer of its mode and its open session. */
export interface BotState {
  bot: Bot;
  computerId: string | null;
  session: OpenSession | null;
  busy: boolean;
}

export async function botStates(db: Kysely<Database>, bots: readonly Bot[]): Promise<BotState[]> {
  if (bots.length === 0) return [];
  const scopeOf = (bot: Bot) =>
    bot.computer_mode === "team" ? teamScopeKey(bot.workspace_id) : botScopeKey(bot.id);
  const botIds = bots.map((bot) => bot.id);
  const [computers, sessions, screens] = await Promise.all([
    db
      .selectFrom("computers")
      .select(["id", "scope_key"])
      .where("scope_key", "in", [...new Set(bots.map(scopeOf))])
      .execute(),
    openSessions(db, { botIds }),
    screensInUse(db, { botIds }),
  ]);
  const computerOf = new Map(computers.map((row) => [row.scope_key, row.id]));
  return bots.map((bot) => {
    const session = sessions.find((s) => s.botId === bot.id) ?? null;
    return {
      bot,
      computerId: computerOf.get(scopeOf(bot)) ?? null,
      session,
      busy: session !== null || screens.some((s) => s.botId === bot.id),
    };
  });
}
