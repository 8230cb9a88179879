import type { Database, DatabaseHandle, ExecutionLeasesTable, ScreenLeasesTable } from "@cubicle/db";
import { type Kysely, type Selectable, sql } from "kysely";
import { type AuditActor, type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import { iso } from "../http/iso.ts";

/**
 * Sessions are execution leases (docs/architecture.md, "Domain"): one open session per bot (the
 * partial unique index `execution_leases_one_open_per_bot`), each with a fence from the shared
 * `lease_fence` sequence. A session on a graphical computer also holds a screen lease (unique per
 * computer and index, and per computer and bot), released with it. Every change is audited in the
 * transaction that makes it; expiry is judged by the database clock, the one clock every replica
 * shares.
 */

export type ExecutionLease = Selectable<ExecutionLeasesTable>;
export type ScreenLease = Selectable<ScreenLeasesTable>;
export type SessionStatus = "open" | "ended" | "expired";
export type Outcome = "success" | "failure";

/** A session as callers see it: the lease, who holds it, its screen, and whether it is still live. */
export interface SessionView extends ExecutionLease {
  /** `open` only while not past its expiry, whatever the row says until it is swept. */
  effective_status: SessionStatus;
  holder_name: string | null;
  holder_email: string | null;
  screen_index: number | null;
}

export interface LeaseStore {
  database: DatabaseHandle;
  audit: AuditLog;
}

/** Who holds (or asks for) a session: a person or an API key. */
export interface Holder {
  type: "user" | "api_key";
  id: string;
}

const inFuture = (ms: number) => sql<Date>`now() + cast(${ms} as integer) * interval '1 millisecond'`;

function sessions(db: Kysely<Database>) {
  return db
    .selectFrom("execution_leases")
    .leftJoin("user", (join) =>
      join
        .onRef("user.id", "=", "execution_leases.holder_id")
        .on("execution_leases.holder_type", "=", "user"),
    )
    .leftJoin("apikey", (join) =>
      join
        .onRef("apikey.id", "=", "execution_leases.holder_id")
        .on("execution_leases.holder_type", "=", "api_key"),
    )
    .leftJoin("screen_leases", "screen_leases.execution_lease_id", "execution_leases.id")
    .selectAll("execution_leases")
    .select([
      sql<SessionStatus>`case when execution_leases.status = 'open' and execution_leases.expires_at <= now() then 'expired' else execution_leases.status end`.as(
        "effective_status",
      ),
      sql<string | null>`coalesce("user"."name", "apikey"."name")`.as("holder_name"),
      "user.email as holder_email",
      "screen_leases.screen_index",
    ]);
}

export function findSession(
  db: Kysely<Database>,
  workspaceId: string,
  sessionId: string,
): Promise<SessionView | undefined> {
  return sessions(db)
    .where("execution_leases.id", "=", sessionId)
    .where("execution_leases.workspace_id", "=", workspaceId)
    .executeTakeFirst();
}

/** The bot's session that is open and not past its expiry, if any. */
export function liveSessionOfBot(db: Kysely<Database>, botId: string): Promise<SessionView | undefined> {
  return sessions(db)
    .where("execution_leases.bot_id", "=", botId)
    .where("execution_leases.status", "=", "open")
    .where("execution_leases.expires_at", ">", sql<Date>`now()`)
    .executeTakeFirst();
}

/** Open, unexpired sessions of a workspace (optionally of one bot), oldest first. */
export function liveSessions(
  db: Kysely<Database>,
  workspaceId: string,
  botId?: string,
): Promise<SessionView[]> {
  let query = sessions(db)
    .where("execution_leases.workspace_id", "=", workspaceId)
    .where("execution_leases.status", "=", "open")
    .where("execution_leases.expires_at", ">", sql<Date>`now()`);
  if (botId !== undefined) query = query.where("execution_leases.bot_id", "=", botId);
  return query.orderBy("execution_leases.fence").execute();
}

export const describeHolder = (session: Pick<SessionView, "holder_type" | "holder_name" | "holder_email">) =>
  session.holder_type === "user"
    ? `${session.holder_name ?? "a person"}${session.holder_email ? ` <${session.holder_email}>` : ""}`
    : `API key "${session.holder_name ?? "unnamed"}"`;

async function record(
  store: LeaseStore,
  db: Kysely<Database>,
  actor: AuditActor,
  action: string,
  lease: ExecutionLease,
  data: Record<string, unknown>,
): Promise<void> {
  await store.audit.record(
    {
      actor,
      workspaceId: lease.workspace_id,
      action,
      target: { type: "session", id: lease.id },
      data: { botId: lease.bot_id, computerId: lease.computer_id, fence: lease.fence, ...data },
    },
    db,
  );
}

/**
 * Marks expired every open session past its expiry (all of them, or those of one computer or
 * bot) and releases their screens, plus any screen lease that outlived its session. One UPDATE
 * claims each lease, so when replicas sweep at once each is expired and audited exactly once; it
 * commits with the screens and records (in the caller's transaction, or one of its own), so a
 * replica killed half-way leaves none of it done.
 */
export async function expireDue(
  store: LeaseStore,
  db: Kysely<Database> = store.database.db,
  scope?: { computerId: string; botId: string },
): Promise<ExecutionLease[]> {
  if (!db.isTransaction) return db.transaction().execute((trx) => expireDue(store, trx, scope));
  let query = db
    .updateTable("execution_leases")
    .set({ status: "expired", ended_at: sql`now()` })
    .where("status", "=", "open")
    .where("expires_at", "<=", sql<Date>`now()`);
  if (scope)
    query = query.where((eb) =>
      eb.or([eb("computer_id", "=", scope.computerId), eb("bot_id", "=", scope.botId)]),
    );
  const expired = await query.returningAll().execute();
  let screens = db
    .updateTable("screen_leases")
    .set({ released_at: sql`now()` })
    .where("released_at", "is", null)
    .where((eb) =>
      eb.or([
        eb("expires_at", "<=", sql<Date>`now()`),
        eb.exists(
          eb
            .selectFrom("execution_leases")
            .select("execution_leases.id")
            .whereRef("execution_leases.id", "=", "screen_leases.execution_lease_id")
            .where("execution_leases.status", "<>", "open"),
        ),
      ]),
    );
  if (scope) screens = screens.where("computer_id", "=", scope.computerId);
  const released = await screens.returningAll().execute();
  const screenOf = new Map(released.map((lease) => [lease.execution_lease_id, lease]));
  for (const lease of expired) {
    const screen = screenOf.get(lease.id);
    await record(store, db, SYSTEM_ACTOR, "session.expired", lease, {
      expiresAt: iso(lease.expires_at),
      screen: screen?.screen_index ?? null,
    });
  }
  return expired;
}

export interface OpenRequest {
  workspaceId: string;
  botId: string;
  computerId: string;
  /** Private computers use screen 0; a Team Computer hands out the lowest free index. */
  computerScope: "team" | "private";
  /** How many screens the provider can give (0 when it has none). */
  screens: number;
  holder: Holder;
  actor: AuditActor;
  leaseMs: number;
}

/** The bot was archived, or switched computers, between the caller's look and the lock. */
export class BotChanged extends Error {
  constructor(readonly archived: boolean) {
    super(archived ? "the bot was archived" : "the bot switched computers");
    this.name = "BotChanged";
  }
}

/**
 * Opens a session: first locks the bot row (switching its computer and archiving it lock it too,
 * so neither can slip between the check and the lease) and expires what ran out (so an abandoned session of the bot is reclaimed
 * and its screen freed), then inserts the lease and a screen lease when one is free. Throws the
 * database's unique violation when the bot already has a live session (see isUniqueViolation).
 */
export function openLease(
  store: LeaseStore,
  request: OpenRequest,
): Promise<{ lease: ExecutionLease; screen: ScreenLease | null; reclaimed: ExecutionLease[] }> {
  return store.database.db.transaction().execute(async (trx) => {
    const bot = await trx
      .selectFrom("bots")
      .select(["computer_mode", "archived_at"])
      .where("id", "=", request.botId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (bot.archived_at !== null) throw new BotChanged(true);
    if (bot.computer_mode !== request.computerScope) throw new BotChanged(false);
    const reclaimed = await expireDue(store, trx, { computerId: request.computerId, botId: request.botId });
    const lease = await trx
      .insertInto("execution_leases")
      .values({
        workspace_id: request.workspaceId,
        computer_id: request.computerId,
        bot_id: request.botId,
        holder_type: request.holder.type,
        holder_id: request.holder.id,
        expires_at: inFuture(request.leaseMs),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const screen = await allocateScreen(trx, lease, request);
    await record(store, trx, request.actor, "session.opened", lease, {
      expiresAt: iso(lease.expires_at),
      holder: request.holder,
      screen: screen?.screen_index ?? null,
      screenLeaseId: screen?.id ?? null,
      screenFence: screen?.fence ?? null,
      reclaimed: reclaimed.filter((old) => old.bot_id === request.botId).map((old) => old.id),
    });
    return { lease, screen, reclaimed };
  });
}

/**
 * The lowest free screen index. Two sessions picking the same index at once both insert; the
 * unique index makes the later one wait for the earlier, and `on conflict do nothing` turns its
 * loss into "try the next one" instead of an aborted transaction.
 */
async function allocateScreen(
  trx: Kysely<Database>,
  lease: ExecutionLease,
  request: OpenRequest,
): Promise<ScreenLease | null> {
  const candidates =
    request.computerScope === "private"
      ? request.screens > 0
        ? [0]
        : []
      : Array.from({ length: Math.min(8, request.screens) }, (_, index) => index);
  const tried = new Set<number>();
  while (tried.size < candidates.length) {
    const used = new Set(
      (
        await trx
          .selectFrom("screen_leases")
          .select("screen_index")
          .where("computer_id", "=", request.computerId)
          .where("released_at", "is", null)
          .execute()
      ).map((row) => row.screen_index),
    );
    const index = candidates.find((candidate) => !used.has(candidate) && !tried.has(candidate));
    if (index === undefined) return null;
    tried.add(index);
    const granted = await trx
      .insertInto("screen_leases")
      .values({
        workspace_id: request.workspaceId,
        computer_id: request.computerId,
        bot_id: request.botId,
        execution_lease_id: lease.id,
        screen_index: index,
        expires_at: lease.expires_at,
      })
      .onConflict((oc) => oc.doNothing())
      .returningAll()
      .executeTakeFirst();
    if (granted) return granted;
  }
  return null;
}

/** Conditions under which a write carrying `fence` for this session is still current. */
function current(db: Kysely<Database>, sessionId: string, fence: number) {
  return db
    .updateTable("execution_leases")
    .where("id", "=", sessionId)
    .where("fence", "=", fence)
    .where("status", "=", "open")
    .where("expires_at", ">", sql<Date>`now()`);
}

/** Extends a live session and its screen; undefined when the fence is no longer current. */
export function renewLease(
  store: LeaseStore,
  sessionId: string,
  fence: number,
  actor: AuditActor,
  leaseMs: number,
): Promise<ExecutionLease | undefined> {
  return store.database.db.transaction().execute(async (trx) => {
    const lease = await current(trx, sessionId, fence)
      .set({ expires_at: inFuture(leaseMs), heartbeat_at: sql`now()` })
      .returningAll()
      .executeTakeFirst();
    if (!lease) return undefined;
    await trx
      .updateTable("screen_leases")
      .set({ expires_at: lease.expires_at })
      .where("execution_lease_id", "=", lease.id)
      .where("released_at", "is", null)
      .execute();
    await record(store, trx, actor, "session.renewed", lease, { expiresAt: iso(lease.expires_at) });
    return lease;
  });
}

/** Ends a live session with its outcome and frees its screen; undefined when the fence is stale. */
export function endLease(
  store: LeaseStore,
  sessionId: string,
  fence: number,
  outcome: Outcome,
  actor: AuditActor,
): Promise<ExecutionLease | undefined> {
  return store.database.db.transaction().execute(async (trx) => {
    const lease = await current(trx, sessionId, fence)
      .set({ status: "ended", outcome, ended_at: sql`now()` })
      .returningAll()
      .executeTakeFirst();
    if (!lease) return undefined;
    const screen = await trx
      .updateTable("screen_leases")
      .set({ released_at: sql`now()` })
      .where("execution_lease_id", "=", lease.id)
      .where("released_at", "is", null)
      .returningAll()
      .executeTakeFirst();
    await record(store, trx, actor, "session.ended", lease, {
      outcome,
      screen: screen?.screen_index ?? null,
      screenFence: screen?.fence ?? null,
    });
    return lease;
  });
}

/** Both drivers report Postgres' SQLSTATE as `code`. */
export const isUniqueViolation = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "23505";
