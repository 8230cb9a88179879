import type { ControlLease, Database, DatabaseHandle } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { WORKSPACE_ROLES } from "../access/roles.ts";
import { type AuditActor, type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import { iso } from "../http/iso.ts";
import { type ControlHolder, controlRefusal, screenAccessOf, subjectOfHolder } from "./access.ts";

/**
 * Control leases in the database: one live lease per screen (the partial unique index
 * `control_leases_one_per_screen`), every change audited and announced on
 * CONTROL_LEASES_CHANNEL in the same transaction, so the announcement goes out only if the
 * change commits, and reaches every api replica (which stream it to every proxy replica).
 */
export const CONTROL_LEASES_CHANNEL = "cubicle_control_leases";

export type EndReason = "released" | "revoked" | "expired";

/** What a proxy needs to know about a live lease. */
export interface LeaseSummary {
  id: string;
  workspaceId: string;
  computerId: string;
  screen: number;
  expiresAt: string;
}

export type LeaseEvent =
  | { type: "granted" | "renewed"; lease: LeaseSummary }
  | { type: "ended"; id: string; reason: EndReason };

export interface LiveLease extends ControlLease {
  /** The person's name, or the API key's. */
  holder_name: string;
  /** A person's; null for an API key. */
  holder_email: string | null;
}

export const holderOf = (lease: ControlLease): ControlHolder => ({
  type: lease.holder_type,
  id: lease.holder_id,
});

export const isHeldBy = (lease: ControlLease, holder: ControlHolder): boolean =>
  lease.holder_type === holder.type && lease.holder_id === holder.id;

/** How a refusal names the holder to whoever asked for the screen. */
export const describeControlHolder = (lease: LiveLease): string =>
  lease.holder_type === "user"
    ? `${lease.holder_name} <${lease.holder_email}>`
    : `API key "${lease.holder_name}"`;

export interface LeaseStore {
  database: DatabaseHandle;
  audit: AuditLog;
}

const summaryOf = (lease: ControlLease): LeaseSummary => ({
  id: lease.id,
  workspaceId: lease.workspace_id,
  computerId: lease.computer_id,
  screen: lease.screen_index,
  expiresAt: iso(lease.expires_at),
});

// Expiry is judged by the database clock, the one clock every replica shares.
const inFuture = (ms: number) => sql<Date>`now() + cast(${ms} as integer) * interval '1 millisecond'`;

/** Live control leases with their holder's name (a person's or a key's). */
export function liveLeases(db: Kysely<Database>) {
  return db
    .selectFrom("control_leases")
    .leftJoin("user", (join) =>
      join.onRef("user.id", "=", "control_leases.holder_id").on("control_leases.holder_type", "=", "user"),
    )
    .leftJoin("apikey", (join) =>
      join
        .onRef("apikey.id", "=", "control_leases.holder_id")
        .on("control_leases.holder_type", "=", "api_key"),
    )
    .selectAll("control_leases")
    .select([
      sql<string>`coalesce("user"."name", "apikey"."name", control_leases.holder_id)`.as("holder_name"),
      "user.email as holder_email",
    ])
    .where("control_leases.released_at", "is", null)
    .where("control_leases.expires_at", ">", sql<Date>`now()`);
}

export function liveLease(
  db: Kysely<Database>,
  computerId: string,
  screen: number,
): Promise<LiveLease | undefined> {
  return liveLeases(db)
    .where("control_leases.computer_id", "=", computerId)
    .where("control_leases.screen_index", "=", screen)
    .executeTakeFirst();
}

export async function allLiveLeases(db: Kysely<Database>): Promise<LeaseSummary[]> {
  return (await liveLeases(db).orderBy("control_leases.fence").execute()).map(summaryOf);
}

/** A lease of this screen by id, live or ended; other screens' leases are not found. */
export function leaseOnScreen(
  db: Kysely<Database>,
  leaseId: string,
  computerId: string,
  screen: number,
): Promise<ControlLease | undefined> {
  return db
    .selectFrom("control_leases")
    .selectAll()
    .where("id", "=", leaseId)
    .where("computer_id", "=", computerId)
    .where("screen_index", "=", screen)
    .executeTakeFirst();
}

export const isLive = (lease: ControlLease, now = new Date()) =>
  lease.released_at === null && lease.expires_at.getTime() > now.getTime();

async function announce(db: Kysely<Database>, event: LeaseEvent): Promise<void> {
  await sql`select pg_notify(${CONTROL_LEASES_CHANNEL}, ${JSON.stringify(event)})`.execute(db);
}

async function recordChange(
  store: LeaseStore,
  db: Kysely<Database>,
  actor: AuditActor,
  change: "granted" | "renewed" | EndReason,
  lease: ControlLease,
): Promise<void> {
  await store.audit.record(
    {
      actor,
      workspaceId: lease.workspace_id,
      action: `screen.control_${change}`,
      target: { type: "computer", id: lease.computer_id },
      data: {
        leaseId: lease.id,
        fence: lease.fence,
        screen: lease.screen_index,
        holder: holderOf(lease),
        ...(lease.released_at === null ? { expiresAt: iso(lease.expires_at) } : {}),
      },
    },
    db,
  );
  await announce(
    db,
    change === "granted" || change === "renewed"
      ? { type: change, lease: summaryOf(lease) }
      : { type: "ended", id: lease.id, reason: change },
  );
}

/**
 * Ends every lease whose time ran out (of one screen, or all): a single UPDATE, so when several
 * replicas run this at once each lease is ended, audited and announced exactly once. The UPDATE
 * and its records commit together (in the caller's transaction, or one of its own): a replica
 * killed between them would leave leases ended with no record and no announcement, for good.
 */
export async function expireDue(
  store: LeaseStore,
  db: Kysely<Database> = store.database.db,
  screen?: { computerId: string; screen: number },
): Promise<ControlLease[]> {
  if (!db.isTransaction) return db.transaction().execute((trx) => expireDue(store, trx, screen));
  let query = db
    .updateTable("control_leases")
    .set({ released_at: sql`now()`, release_reason: "expired" })
    .where("released_at", "is", null)
    .where("expires_at", "<=", sql<Date>`now()`);
  if (screen)
    query = query.where("computer_id", "=", screen.computerId).where("screen_index", "=", screen.screen);
  const expired = await query.returningAll().execute();
  for (const lease of expired) await recordChange(store, db, SYSTEM_ACTOR, "expired", lease);
  return expired;
}

/** The roles whose holders may control a screen (screens/access.ts says who may). */
const CONTROLLING_ROLES = WORKSPACE_ROLES.filter((role) => controlRefusal(role) === undefined);

/**
 * Ends, as revoked, every live lease whose holder may no longer control screens of its workspace
 * (a person removed from it or given a role below member; a key revoked, expired, deleted, or
 * capped below member by its creator's role), so that its control server stops and the screen is
 * free again instead of staying held until the lease runs out. It runs every few hundred
 * milliseconds on every replica: people's leases are judged in one UPDATE; a key's role needs
 * screenAccessOf (its metadata and its creator's role), asked only of leases keys hold, which are
 * few. Either way the UPDATE ends only leases still live, committed with their records, so
 * replicas running this together end, audit and announce each lease once.
 */
export async function revokeFormerControllers(
  store: LeaseStore,
  db: Kysely<Database> = store.database.db,
): Promise<ControlLease[]> {
  if (!db.isTransaction) return db.transaction().execute((trx) => revokeFormerControllers(store, trx));
  const formerKeys: string[] = [];
  const keyLeases = await liveLeases(db).where("control_leases.holder_type", "=", "api_key").execute();
  for (const lease of keyLeases) {
    const access = await screenAccessOf(db, subjectOfHolder(holderOf(lease)), lease.workspace_id);
    if (!access.modes.includes("control")) formerKeys.push(lease.id);
  }
  const revoked = await db
    .updateTable("control_leases")
    .set({ released_at: sql`now()`, release_reason: "revoked" })
    .where("released_at", "is", null)
    .where("expires_at", ">", sql<Date>`now()`)
    .where(({ and, or, not, exists, selectFrom, eb }) =>
      or([
        and([
          eb("control_leases.holder_type", "=", "user"),
          not(
            exists(
              selectFrom("member")
                .select("member.id")
                .whereRef("member.organizationId", "=", "control_leases.workspace_id")
                .whereRef("member.userId", "=", "control_leases.holder_id")
                .where("member.role", "in", CONTROLLING_ROLES),
            ),
          ),
        ]),
        eb("control_leases.id", "in", formerKeys.length > 0 ? formerKeys : [""]),
      ]),
    )
    .returningAll()
    .execute();
  for (const lease of revoked) await recordChange(store, db, SYSTEM_ACTOR, "revoked", lease);
  return revoked;
}

export interface Grant {
  /** Chosen by the caller, so the lease's control server can be started before the lease exists. */
  id: string;
  workspaceId: string;
  computerId: string;
  screen: number;
  holder: ControlHolder;
  actor: AuditActor;
  leaseMs: number;
}

/**
 * Grants the screen, first ending a lease of it that expired but was not swept yet. Throws the
 * database's unique violation when someone else holds the screen (see isUniqueViolation).
 */
export function grantLease(
  store: LeaseStore,
  grant: Grant,
): Promise<{ lease: ControlLease; expired: ControlLease[] }> {
  return store.database.db.transaction().execute(async (trx) => {
    const expired = await expireDue(store, trx, grant);
    const lease = await trx
      .insertInto("control_leases")
      .values({
        id: grant.id,
        workspace_id: grant.workspaceId,
        computer_id: grant.computerId,
        screen_index: grant.screen,
        holder_type: grant.holder.type,
        holder_id: grant.holder.id,
        expires_at: inFuture(grant.leaseMs),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordChange(store, trx, grant.actor, "granted", lease);
    return { lease, expired };
  });
}

/** Extends a live lease of this holder; undefined when it is not (any longer) theirs and live. */
export function renewLease(
  store: LeaseStore,
  leaseId: string,
  holder: ControlHolder,
  actor: AuditActor,
  leaseMs: number,
): Promise<ControlLease | undefined> {
  return store.database.db.transaction().execute(async (trx) => {
    const lease = await trx
      .updateTable("control_leases")
      .set({ expires_at: inFuture(leaseMs) })
      .where("id", "=", leaseId)
      .where("holder_type", "=", holder.type)
      .where("holder_id", "=", holder.id)
      .where("released_at", "is", null)
      .where("expires_at", ">", sql<Date>`now()`)
      .returningAll()
      .executeTakeFirst();
    if (lease) await recordChange(store, trx, actor, "renewed", lease);
    return lease;
  });
}

/**
 * Ends exactly this lease if it is still live. Keyed by lease id, so a release that arrives late
 * can never end a newer lease of the same screen. Undefined when it had already ended.
 */
export function endLease(
  store: LeaseStore,
  leaseId: string,
  reason: "released" | "revoked",
  actor: AuditActor,
): Promise<ControlLease | undefined> {
  return store.database.db.transaction().execute(async (trx) => {
    const lease = await trx
      .updateTable("control_leases")
      .set({ released_at: sql`now()`, release_reason: reason })
      .where("id", "=", leaseId)
      .where("released_at", "is", null)
      .where("expires_at", ">", sql<Date>`now()`)
      .returningAll()
      .executeTakeFirst();
    if (lease) await recordChange(store, trx, actor, reason, lease);
    return lease;
  });
}

/** Both drivers report Postgres' SQLSTATE as `code`. */
export const isUniqueViolation = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "23505";
