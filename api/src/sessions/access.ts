import type { Bot, Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import type { Principal } from "../auth/principal.ts";
import { iso } from "../http/iso.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { describeHolder, findSession, type Holder, liveSessionOfBot, type SessionView } from "./leases.ts";
import { FENCE_HEADER } from "./schemas.ts";

/** The session, if it belongs to this bot of this workspace. */
export async function requireSession(
  db: Kysely<Database>,
  workspaceId: string,
  botId: string,
  sessionId: string,
): Promise<SessionView> {
  const session = await findSession(db, workspaceId, sessionId);
  if (!session || session.bot_id !== botId) throw notFound("session");
  return session;
}

export function holderOf(principal: Principal): Holder {
  if (principal.kind === "user") return { type: "user", id: principal.userId };
  if (principal.kind === "api_key") return { type: "api_key", id: principal.keyId };
  throw new Error("sessions are held by a person or an API key");
}

export const holds = (principal: Principal, session: SessionView): boolean => {
  const holder = holderOf(principal);
  return holder.type === session.holder_type && holder.id === session.holder_id;
};

export const notHolder = (session: SessionView) =>
  new HttpProblem(
    403,
    "NOT_SESSION_HOLDER",
    `Only the session's holder (${describeHolder(session)}) may use it; an admin or owner may end it.`,
  );

/** Refuses a write whose fence is not the live session's: says why, and who holds the bot now. */
export async function staleFence(
  db: Kysely<Database>,
  session: SessionView,
  fence: number,
): Promise<HttpProblem> {
  let why: string;
  if (fence !== session.fence) why = `${FENCE_HEADER} ${fence} is not this session's fence.`;
  else if (session.effective_status === "ended")
    why = `This session ended${session.outcome ? ` (${session.outcome})` : ""}.`;
  else why = `This session expired at ${iso(session.expires_at)} without a heartbeat.`;
  const newer = await liveSessionOfBot(db, session.bot_id);
  if (newer && newer.id !== session.id)
    why += ` Session ${newer.id} (fence ${newer.fence}, ${describeHolder(newer)}) now holds the bot.`;
  return new HttpProblem(409, "STALE_FENCE", why);
}

/** The fence must be the session's and the session still open and unexpired. */
export async function requireCurrent(
  db: Kysely<Database>,
  session: SessionView,
  fence: number,
): Promise<void> {
  if (session.fence !== fence || session.effective_status !== "open")
    throw await staleFence(db, session, fence);
}

export function computerBusy(bot: Bot, holder: SessionView): HttpProblem {
  const busy = new HttpProblem(
    409,
    "COMPUTER_BUSY",
    `Bot ${bot.name} already has an open session, held by ${describeHolder(holder)} until ` +
      `${iso(holder.expires_at)} (session ${holder.id}). It ends when its holder ends it or stops heartbeating.`,
  );
  busy.holder = {
    type: holder.holder_type,
    id: holder.holder_id,
    name: holder.holder_name,
    sessionId: holder.id,
    expiresAt: iso(holder.expires_at),
  };
  return busy;
}
