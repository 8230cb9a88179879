import type { ActorType, AuditEvent, Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { isEventAction, WORKSPACE_EVENTS_CHANNEL } from "../events/kinds.ts";
import { currentRequest } from "../http/request-context.ts";

export interface AuditActor {
  type: ActorType;
  id: string | null;
  /** Human-readable: an email or a key name, kept so the record reads well after deletions. */
  label: string | null;
}

export interface AuditEntry {
  actor: AuditActor;
  action: string;
  workspaceId?: string | null;
  target?: { type: string; id: string };
  data?: Record<string, unknown>;
}

export interface AuditQuery {
  workspaceId?: string;
  actorId?: string;
  actorType?: ActorType;
  /** Exact action, or a prefix ending in `.*` (e.g. `member.*`). */
  action?: string;
  targetType?: string;
  targetId?: string;
  since?: Date;
  until?: Date;
  cursor?: string;
  limit: number;
}

export interface AuditPage {
  items: AuditEvent[];
  nextCursor: string | null;
}

export const SYSTEM_ACTOR: AuditActor = { type: "system", id: null, label: "cubicle" };

/** Append-only record of who changed what; the table itself refuses UPDATE and DELETE. */
export class AuditLog {
  constructor(private readonly db: Kysely<Database>) {}

  /** `db` may be a transaction, so the record commits (or not) with the change it describes. */
  async record(entry: AuditEntry, db: Kysely<Database> = this.db): Promise<void> {
    const request = currentRequest();
    await db
      .insertInto("audit_events")
      .values({
        workspace_id: entry.workspaceId ?? null,
        actor_type: entry.actor.type,
        actor_id: entry.actor.id,
        actor_label: entry.actor.label,
        action: entry.action,
        target_type: entry.target?.type ?? null,
        target_id: entry.target?.id ?? null,
        ip: request?.ip ?? null,
        request_id: request?.requestId ?? null,
        data: JSON.stringify(entry.data ?? {}),
      })
      .execute();
    // wakes the workspace's event streams on every replica, when (and only if) the record commits
    if (entry.workspaceId && isEventAction(entry.action))
      await sql`select pg_notify(${WORKSPACE_EVENTS_CHANNEL}, ${entry.workspaceId})`.execute(db);
  }

  /** Newest first; the cursor is the id of the last event of the previous page. */
  async query(filters: AuditQuery): Promise<AuditPage> {
    let query = this.db
      .selectFrom("audit_events")
      .selectAll()
      .orderBy("id", "desc")
      .limit(filters.limit + 1);
    if (filters.workspaceId !== undefined) query = query.where("workspace_id", "=", filters.workspaceId);
    if (filters.actorId !== undefined) query = query.where("actor_id", "=", filters.actorId);
    if (filters.actorType !== undefined) query = query.where("actor_type", "=", filters.actorType);
    if (filters.action !== undefined) {
      query = filters.action.endsWith(".*")
        ? query.where("action", "like", `${escapeLike(filters.action.slice(0, -1))}%`)
        : query.where("action", "=", filters.action);
    }
    if (filters.targetType !== undefined) query = query.where("target_type", "=", filters.targetType);
    if (filters.targetId !== undefined) query = query.where("target_id", "=", filters.targetId);
    if (filters.since !== undefined) query = query.where("occurred_at", ">=", filters.since);
    if (filters.until !== undefined) query = query.where("occurred_at", "<", filters.until);
    if (filters.cursor !== undefined) query = query.where("id", "<", decodeCursor(filters.cursor));
    const rows = await query.execute();
    const items = rows.slice(0, filters.limit);
    const last = items.at(-1);
    return { items, nextCursor: rows.length > filters.limit && last ? encodeCursor(last.id) : null };
  }
}

export class InvalidCursorError extends Error {}

const encodeCursor = (id: number) => Buffer.from(`audit:${id}`).toString("base64url");

function decodeCursor(cursor: string): number {
  const match = /^audit:(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString());
  if (!match?.[1]) throw new InvalidCursorError("cursor is not one this API returned");
  return Number(match[1]);
}

const escapeLike = (value: string) => value.replace(/[\\%_]/g, (ch) => `\\${ch}`);
