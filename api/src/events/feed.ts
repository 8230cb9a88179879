import type { ActorType, Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { iso } from "../http/iso.ts";
import { EVENT_ACTIONS, type EventAction } from "./kinds.ts";
import { encodePosition, ORIGIN, type Position } from "./position.ts";

/** What a member sees of an audit record: no ip or request id (other people's), no actor id. */
export interface WorkspaceEvent {
  id: string;
  type: EventAction;
  occurredAt: string;
  workspaceId: string;
  actor: { type: ActorType; label: string | null };
  target: { type: string; id: string } | null;
  data: Record<string, unknown>;
}

export interface Batch {
  /** In stream order; each one's `id` is its position. */
  events: (WorkspaceEvent & { position: Position })[];
  /** More settled events follow at once (the batch was cut at its limit). */
  more: boolean;
  /** Committed events follow that are not settled yet: ask again shortly. */
  unsettled: boolean;
}

const BATCH = 200;

/**
 * Every transaction older than the oldest one still running has ended, so no row can appear any
 * more with an `xact` below this: a row under it is settled, and is delivered in (xact, id) order.
 * That order is the same for every reader and every resume, and follows causality: a transaction
 * that began after another committed has a larger xact.
 */
const HORIZON = sql`pg_snapshot_xmin(pg_current_snapshot())`;

const events = (db: Kysely<Database>, workspaceId: string) =>
  db
    .selectFrom("audit_events")
    .where("workspace_id", "=", workspaceId)
    .where("action", "in", EVENT_ACTIONS)
    // rows older than live events have none: they come before every position given out
    .where("xact", "is not", null);

/**
 * The workspace's events after `after`, as far as they are settled. One statement, so the horizon
 * and the rows come from the same snapshot.
 */
export async function readAfter(db: Kysely<Database>, workspaceId: string, after: Position): Promise<Batch> {
  const rows = await events(db, workspaceId)
    .select([
      "id",
      sql<string>`xact::text`.as("xact"),
      "occurred_at",
      "action",
      "actor_type",
      "actor_label",
      "target_type",
      "target_id",
      "data",
      sql<boolean>`xact < ${HORIZON}`.as("settled"),
    ])
    .where(sql<boolean>`(xact, id) > (cast(${after.xact} as xid8), ${after.id})`)
    .orderBy("xact")
    .orderBy("id")
    .limit(BATCH)
    .execute();
  // settled rows all come first: ordered by xact, and settled means xact below one bound
  const settled = rows.filter((row) => row.settled);
  return {
    events: settled.map((row) => {
      const position = { xact: row.xact, id: row.id };
      return {
        position,
        id: encodePosition(position),
        type: row.action as EventAction,
        occurredAt: iso(row.occurred_at),
        workspaceId,
        actor: { type: row.actor_type, label: row.actor_label },
        target: row.target_type && row.target_id ? { type: row.target_type, id: row.target_id } : null,
        data: row.data,
      };
    }),
    more: rows.length === BATCH && settled.length === BATCH,
    unsettled: settled.length < rows.length,
  };
}

/**
 * Where a stream that starts now begins: after the newest settled event. Events committed but not
 * yet settled come after it, and are sent once they settle.
 */
export async function tail(db: Kysely<Database>, workspaceId: string): Promise<Position> {
  const newest = await events(db, workspaceId)
    .select(["id", sql<string>`xact::text`.as("xact")])
    .where(sql<boolean>`xact < ${HORIZON}`)
    .orderBy("xact", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  return newest ? { xact: newest.xact, id: newest.id } : ORIGIN;
}
