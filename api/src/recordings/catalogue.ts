import type { Database, Recording, RecordingStatus } from "@cubicle/db";
import type { RecordingEnd } from "@cubicle/proxy/recording";
import { type Kysely, sql } from "kysely";
import { HttpProblem, notFound } from "../http/problem.ts";

/** What is known of a recording when its capability is minted. */
export interface PendingRecording {
  workspaceId: string;
  computerId: string;
  screen: number;
  kind: "control" | "session";
  sessionId?: string;
  controlLeaseId?: string;
  botId?: string | null;
  /** The person or key it is made for (a session's holder, a control lease's holder). */
  actor: { type: "user" | "api_key"; id: string; name: string };
}

/**
 * The recording's row, `pending` until the proxy's upload begins; its id goes into the capability
 * and the audit row of the grant. A second live recording of one session is refused by the
 * database (a unique violation: see isUniqueViolation).
 */
export async function createPendingRecording(
  db: Kysely<Database>,
  recording: PendingRecording,
): Promise<string> {
  const row = await db
    .insertInto("recordings")
    .values({
      workspace_id: recording.workspaceId,
      computer_id: recording.computerId,
      screen: recording.screen,
      kind: recording.kind,
      session_id: recording.sessionId ?? null,
      control_lease_id: recording.controlLeaseId ?? null,
      bot_id: recording.botId ?? null,
      actor_type: recording.actor.type,
      actor_id: recording.actor.id,
      actor_name: recording.actor.name,
      status: "pending",
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Drops a recording whose socket was never opened (nothing was recorded under it). */
export async function discardPendingRecording(db: Kysely<Database>, recordingId: string): Promise<void> {
  await db.deleteFrom("recordings").where("id", "=", recordingId).where("status", "=", "pending").execute();
}

/** Whether anything on this screen is being recorded now (or about to be: a capability is out). */
export async function screenRecorded(
  db: Kysely<Database>,
  computerId: string,
  screen: number,
): Promise<boolean> {
  const row = await db
    .selectFrom("recordings")
    .select("id")
    .where("computer_id", "=", computerId)
    .where("screen", "=", screen)
    .where("status", "in", ["pending", "recording"])
    .executeTakeFirst();
  return row !== undefined;
}

/** Where a part of a recording's upload continues it: the database's state, not a replica's. */
export interface RecordingPart {
  /** The seq of the next chunk. */
  seq: number;
  /** Bytes of records stored so far: the offset of the part's first record in the stream. */
  offset: number;
  /** The time of the last record stored (its duration): a part's records may not go before it. */
  lastAt: number;
  /** Whether the screen's size is known (a ServerInit was stored). */
  sized: boolean;
}

/**
 * Opens one part of a recording's upload, which says where it continues the record stream
 * (`offset`, the bytes of records sent in earlier parts). Part 0 moves `pending → recording`;
 * a later part needs `recording` and exactly the bytes stored, and touches `ingested_at`. Refused:
 * 404 for no such recording; 409 RECORDING_OFFSET_MISMATCH for a part that does not continue the
 * stored stream (a recording under way then ends incomplete: bytes are missing or doubled);
 * 409 RECORDING_NOT_PENDING for a first part of one already begun or ended; 409 RECORDING_ENDED
 * for a later part of one that ended.
 */
export async function openRecordingPart(
  db: Kysely<Database>,
  recordingId: string,
  offset: number,
): Promise<RecordingPart> {
  const now = new Date();
  if (offset === 0) {
    const begun = await db
      .updateTable("recordings")
      .set({ status: "recording", started_at: now, ingested_at: now })
      .where("id", "=", recordingId)
      .where("status", "=", "pending")
      .returning("id")
      .executeTakeFirst();
    if (begun) return { seq: 0, offset: 0, lastAt: 0, sized: false };
  }
  const continued = await db
    .updateTable("recordings")
    .set({ ingested_at: now })
    .where("id", "=", recordingId)
    .where("status", "=", "recording")
    .where("bytes", "=", offset)
    .returning(["duration_ms", "width"])
    .executeTakeFirst();
  if (continued) {
    const last = await db
      .selectFrom("recording_chunks")
      .select((eb) => eb.fn.max<number | null>("seq").as("seq"))
      .where("recording_id", "=", recordingId)
      .executeTakeFirst();
    const lastSeq = last?.seq ?? null;
    return {
      seq: lastSeq === null ? 0 : Number(lastSeq) + 1,
      offset,
      lastAt: continued.duration_ms,
      sized: continued.width !== null,
    };
  }
  const row = await db
    .selectFrom("recordings")
    .select(["status", "bytes"])
    .where("id", "=", recordingId)
    .executeTakeFirst();
  if (!row) throw notFound("recording");
  if (row.status === "recording") {
    await endRecording(db, recordingId, {
      complete: false,
      reason: `a part of its upload did not continue it (offset ${offset}, ${row.bytes} bytes stored)`,
    });
    throw offsetMismatch(recordingId, offset, row.bytes);
  }
  if (row.status === "pending") throw offsetMismatch(recordingId, offset, 0);
  if (offset === 0)
    throw new HttpProblem(
      409,
      "RECORDING_NOT_PENDING",
      `Recording ${recordingId} is ${row.status}, not pending.`,
    );
  throw new HttpProblem(
    409,
    "RECORDING_ENDED",
    `Recording ${recordingId} is ${row.status}: no part may follow its end.`,
  );
}

const offsetMismatch = (recordingId: string, offset: number, stored: number) =>
  new HttpProblem(
    409,
    "RECORDING_OFFSET_MISMATCH",
    `This part of recording ${recordingId} starts at byte ${offset}, but ${stored} bytes are stored.`,
  );

/** Says the upload is alive (between its parts, `ingested_at` is what housekeeping looks at). */
export async function touchRecording(db: Kysely<Database>, recordingId: string): Promise<void> {
  await db
    .updateTable("recordings")
    .set({ ingested_at: new Date() })
    .where("id", "=", recordingId)
    .where("status", "=", "recording")
    .execute();
}

/** The screen's size, from the ServerInit that begins the first server record. */
export async function setRecordingSize(
  db: Kysely<Database>,
  recordingId: string,
  size: { width: number; height: number },
): Promise<void> {
  await db.updateTable("recordings").set(size).where("id", "=", recordingId).execute();
}

/**
 * Ends a recording that is still `recording`: one housekeeping already ended (its upload went
 * quiet) keeps that ending.
 */
export async function endRecording(
  db: Kysely<Database>,
  recordingId: string,
  end: RecordingEnd,
): Promise<void> {
  await db
    .updateTable("recordings")
    .set({
      status: end.complete ? "complete" : "incomplete",
      incomplete_reason: end.complete ? null : (end.reason ?? "the recording ended incomplete"),
      ended_at: new Date(),
      ingested_at: null,
    })
    .where("id", "=", recordingId)
    .where("status", "=", "recording")
    .execute();
}

/** A listed recording of the workspace (never a pending one); another workspace's is 404. */
export async function requireRecording(
  db: Kysely<Database>,
  workspaceId: string,
  recordingId: string,
): Promise<Recording> {
  const row = await db
    .selectFrom("recordings")
    .selectAll()
    .where("id", "=", recordingId)
    .where("workspace_id", "=", workspaceId)
    .where("status", "!=", "pending")
    .executeTakeFirst();
  if (!row) throw notFound("recording");
  return row;
}

export interface RecordingFilters {
  computerId?: string | undefined;
  sessionId?: string | undefined;
  controlLeaseId?: string | undefined;
  status?: Exclude<RecordingStatus, "pending"> | undefined;
  cursor?: string | undefined;
  limit: number;
}

/** Newest first (by start, then id); the cursor is the last item's start and id. */
export async function listRecordings(
  db: Kysely<Database>,
  workspaceId: string,
  filters: RecordingFilters,
): Promise<{ items: Recording[]; nextCursor: string | null }> {
  let query = db
    .selectFrom("recordings")
    .selectAll()
    .where("workspace_id", "=", workspaceId)
    .where("status", "!=", "pending")
    .orderBy("started_at", "desc")
    .orderBy("id", "desc")
    .limit(filters.limit + 1);
  if (filters.computerId !== undefined) query = query.where("computer_id", "=", filters.computerId);
  if (filters.sessionId !== undefined) query = query.where("session_id", "=", filters.sessionId);
  if (filters.controlLeaseId !== undefined)
    query = query.where("control_lease_id", "=", filters.controlLeaseId);
  if (filters.status !== undefined) query = query.where("status", "=", filters.status);
  if (filters.cursor !== undefined) {
    const { startedAt, id } = decodeCursor(filters.cursor);
    query = query.where(sql<boolean>`(started_at, id) < (${startedAt}, ${id})`);
  }
  const rows = await query.execute();
  const items = rows.slice(0, filters.limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > filters.limit && last ? encodeCursor(last) : null };
}

// Listed recordings always have a start (set by beginRecording, in milliseconds, so it round-trips).
const encodeCursor = (row: Recording) =>
  Buffer.from(`rec:${row.started_at?.toISOString()}|${row.id}`).toString("base64url");

function decodeCursor(cursor: string): { startedAt: Date; id: string } {
  const match = /^rec:(\d{4}-\d\d-\d\dT[\d:.]+Z)\|([A-Za-z0-9-]{1,64})$/.exec(
    Buffer.from(cursor, "base64url").toString(),
  );
  if (!match?.[1] || !match[2])
    throw new HttpProblem(400, "INVALID_CURSOR", "The cursor is not one this API returned.");
  return { startedAt: new Date(match[1]), id: match[2] };
}
