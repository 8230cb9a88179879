import type { ActorType, Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { iso } from "../http/iso.ts";
import { currentEpoch, type Epoch, resumeFrom } from "./epochs.ts";
import { EVENT_ACTIONS, type EventAction } from "./kinds.ts";
import { encodePosition, originOf, type Position } from "./position.ts";

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
  /**
   * With `unsettled`: the first of them (`<epoch>-<xact>-<id>`), and the oldest transaction still
   * running on the server (the horizon, which it waits to pass).
   */
  waiting?: { position: string; horizon: string };
}

const BATCH = 200;

/**
 * Every transaction older than the oldest one still running has ended, so no row can appear any
 * more with an `xact` below this: a row under it is settled, and is delivered in (xact, id) order.
 * That order is the same for every reader and every resume, and follows causality: a transaction
 * that began after another committed has a larger xact.
 */
const HORIZON = sql`pg_snapshot_xmin(pg_current_snapshot())`;

/** The workspace's events of `epoch`: the audit rows after its floor. */
const events = (db: Kysely<Database>, workspaceId: string, epoch: Epoch) =>
  db
    .selectFrom("audit_events")
    .where("workspace_id", "=", workspaceId)
    .where("action", "in", EVENT_ACTIONS)
    // rows older than live events have none: they come before every position given out
    .where("xact", "is not", null)
    // rows of an earlier epoch carry another server's transaction ids (epochs.ts)
    .where("id", ">", epoch.floor);

/**
 * The workspace's events after `after`, as far as they are settled: in the current epoch, from its
 * beginning if `after` is of an older one. One statement, so the horizon and the rows come from
 * the same snapshot.
 */
export async function readAfter(db: Kysely<Database>, workspaceId: string, after: Position): Promise<Batch> {
  const epoch = await currentEpoch(db);
  const from = resumeFrom(after, epoch);
  const rows = await events(db, workspaceId, epoch)
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
      sql<string>`${HORIZON}::text`.as("horizon"),
    ])
    .where(sql<boolean>`(xact, id) > (cast(${from.xact} as xid8), ${from.id})`)
    .orderBy("xact")
    .orderBy("id")
    .limit(BATCH)
    .execute();
  // settled rows all come first: ordered by xact, and settled means xact below one bound
  const settled = rows.filter((row) => row.settled);
  const firstUnsettled = rows[settled.length];
  return {
    events: settled.map((row) => {
      const position = { epoch: epoch.id, xact: row.xact, id: row.id };
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
    unsettled: firstUnsettled !== undefined,
    ...(firstUnsettled && {
      waiting: {
        position: encodePosition({ epoch: epoch.id, xact: firstUnsettled.xact, id: firstUnsettled.id }),
        horizon: firstUnsettled.horizon,
      },
    }),
  };
}

/**
 * Where a stream that starts now begins: after the newest settled event of the current epoch.
 * Events committed but not yet settled come after it, and are sent once they settle.
 */
export async function tail(db: Kysely<Database>, workspaceId: string): Promise<Position> {
  const epoch = await currentEpoch(db);
  const newest = await events(db, workspaceId, epoch)
    .select(["id", sql<string>`xact::text`.as("xact")])
    .where(sql<boolean>`xact < ${HORIZON}`)
    .orderBy("xact", "desc")
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  return newest ? { epoch: epoch.id, xact: newest.xact, id: newest.id } : originOf(epoch.id);
}
