import type { Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { iso } from "../http/iso.ts";
import { HttpProblem } from "../http/problem.ts";
import { liveLeases } from "../screens/control-leases.ts";

/**
 * Who is using computers right now, read from the lease tables: open sessions (execution leases
 * that are open and not past their expiry), live screen leases and live control leases. Expiry is
 * judged by the database clock, like everywhere leases are.
 */

export interface OpenSession {
  id: string;
  fence: number;
  botId: string;
  botName: string;
  computerId: string;
  holderType: "user" | "api_key";
  holderId: string;
  expiresAt: Date;
  heartbeatAt: Date;
}

export interface ScreenInUse {
  computerId: string;
  index: number;
  botId: string;
  botName: string;
  sessionId: string | null;
  leaseId: string;
  expiresAt: Date;
}

export interface ScreenControl {
  computerId: string;
  index: number;
  leaseId: string;
  holderType: "user" | "api_key";
  holderId: string;
  holderName: string;
  expiresAt: Date;
}

type Filter = { botIds: readonly string[] } | { computerIds: readonly string[] };

export async function openSessions(db: Kysely<Database>, filter: Filter): Promise<OpenSession[]> {
  let query = db
    .selectFrom("execution_leases as l")
    .innerJoin("bots as b", "b.id", "l.bot_id")
    .select([
      "l.id",
      "l.fence",
      "l.bot_id",
      "b.name as bot_name",
      "l.computer_id",
      "l.holder_type",
      "l.holder_id",
      "l.expires_at",
      "l.heartbeat_at",
    ])
    .where("l.status", "=", "open")
    .where("l.expires_at", ">", sql<Date>`now()`)
    .orderBy("l.fence");
  query =
    "botIds" in filter
      ? query.where("l.bot_id", "in", nonEmpty(filter.botIds))
      : query.where("l.computer_id", "in", nonEmpty(filter.computerIds));
  return (await query.execute()).map((row) => ({
    id: row.id,
    fence: row.fence,
    botId: row.bot_id,
    botName: row.bot_name,
    computerId: row.computer_id,
    holderType: row.holder_type,
    holderId: row.holder_id,
    expiresAt: row.expires_at,
    heartbeatAt: row.heartbeat_at,
  }));
}

export async function screensInUse(db: Kysely<Database>, filter: Filter): Promise<ScreenInUse[]> {
  let query = db
    .selectFrom("screen_leases as s")
    .innerJoin("bots as b", "b.id", "s.bot_id")
    .select([
      "s.id",
      "s.computer_id",
      "s.screen_index",
      "s.bot_id",
      "b.name as bot_name",
      "s.execution_lease_id",
      "s.expires_at",
    ])
    .where("s.released_at", "is", null)
    .where("s.expires_at", ">", sql<Date>`now()`)
    .orderBy("s.computer_id")
    .orderBy("s.screen_index");
  query =
    "botIds" in filter
      ? query.where("s.bot_id", "in", nonEmpty(filter.botIds))
      : query.where("s.computer_id", "in", nonEmpty(filter.computerIds));
  return (await query.execute()).map((row) => ({
    computerId: row.computer_id,
    index: row.screen_index,
    botId: row.bot_id,
    botName: row.bot_name,
    sessionId: row.execution_lease_id,
    leaseId: row.id,
    expiresAt: row.expires_at,
  }));
}

export async function screensControlled(
  db: Kysely<Database>,
  computerIds: readonly string[],
): Promise<ScreenControl[]> {
  const rows = await liveLeases(db)
    .where("control_leases.computer_id", "in", nonEmpty(computerIds))
    .orderBy("control_leases.computer_id")
    .orderBy("control_leases.screen_index")
    .execute();
  return rows.map((row) => ({
    computerId: row.computer_id,
    index: row.screen_index,
    leaseId: row.id,
    holderType: row.holder_type,
    holderId: row.holder_id,
    holderName: row.holder_name,
    expiresAt: row.expires_at,
  }));
}

/** `in ()` is not SQL; an id no row has stands in for "none". */
const nonEmpty = (ids: readonly string[]): string[] => (ids.length > 0 ? [...ids] : [""]);

/**
 * Why the bot may not change computers now, or null: an open session, or a live screen lease.
 * Pass a transaction that locked the bot row, so the answer holds until it commits.
 */
export async function botBusy(db: Kysely<Database>, botId: string): Promise<HttpProblem | null> {
  const [session] = await openSessions(db, { botIds: [botId] });
  if (session) {
    return new HttpProblem(
      409,
      "BOT_BUSY",
      `Bot ${session.botName} has an open session (${session.id}, fence ${session.fence}, held by ` +
        `${session.holderType} ${session.holderId}) until ${iso(session.expiresAt)}; end it first.`,
    );
  }
  const [screen] = await screensInUse(db, { botIds: [botId] });
  if (screen) {
    return new HttpProblem(
      409,
      "BOT_BUSY",
      `Bot ${screen.botName} holds screen ${screen.index} of computer ${screen.computerId} until ` +
        `${iso(screen.expiresAt)}; release it first.`,
    );
  }
  return null;
}

/** Why the computer may not be stopped or destroyed now, or null: sessions are open on it. */
export async function computerBusy(db: Kysely<Database>, computerId: string): Promise<HttpProblem | null> {
  const sessions = await openSessions(db, { computerIds: [computerId] });
  const screens = await screensInUse(db, { computerIds: [computerId] });
  if (sessions.length === 0 && screens.length === 0) return null;
  const who = [
    ...sessions.map((s) => `session ${s.id} of bot ${s.botName} (fence ${s.fence})`),
    ...screens
      .filter((s) => !sessions.some((x) => x.id === s.sessionId))
      .map((s) => `screen ${s.index} of bot ${s.botName}`),
  ];
  return new HttpProblem(
    409,
    "COMPUTER_BUSY",
    `The computer is in use: ${who.join(", ")}. End the sessions (or let them expire) first.`,
  );
}
