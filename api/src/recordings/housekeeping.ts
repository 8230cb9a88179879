import type { Database, DatabaseHandle } from "@cubicle/db";
import { MAX_CAPABILITY_TTL_SECONDS } from "@cubicle/proxy/capability";
import { type Kysely, sql } from "kysely";
import { type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import { EXPORT_ABANDONED_MS } from "./exports.ts";
import type { Recordings } from "./recordings.ts";

/** A pending recording whose capability expired unused (with a margin for clocks) was never opened. */
export const PENDING_LIFETIME_MS = (MAX_CAPABILITY_TTL_SECONDS + 60) * 1000;
/**
 * An upload comes in parts of at most 240 s (the proxy's PROXY_RECORDING_PART_MS, 60 s by
 * default), each touching its row as it opens, every 5 s while it lasts (the chunk writer's
 * flush), and as it ends; the next part follows its predecessor's answer at once. One silent
 * this long, well above a whole part, has no api or proxy left.
 */
export const STALE_UPLOAD_MS = 10 * 60_000;
export const STALE_REASON = "its upload stopped arriving: the api or the proxy went away";

export interface RecordingHousekeepingDeps {
  database: DatabaseHandle;
  audit: AuditLog;
  recordings: Recordings;
}

const ago = (ms: number) => sql<Date>`now() - cast(${ms} as bigint) * interval '1 millisecond'`;

/**
 * Once a minute on one replica: pending rows never opened go, recordings whose upload went quiet
 * end incomplete, exports nobody is making fail, and each workspace's retention is applied.
 */
export function recordingHousekeepingJob(deps: RecordingHousekeepingDeps): PeriodicJob {
  return { name: "recording-housekeeping", everyMs: 60_000, run: () => tidyRecordings(deps) };
}

export async function tidyRecordings(deps: RecordingHousekeepingDeps): Promise<void> {
  const { db } = deps.database;
  await db
    .deleteFrom("recordings")
    .where("status", "=", "pending")
    .where("created_at", "<", ago(PENDING_LIFETIME_MS))
    .execute();
  await db
    .updateTable("recordings")
    .set({ status: "incomplete", incomplete_reason: STALE_REASON, ended_at: new Date(), ingested_at: null })
    .where("status", "=", "recording")
    .where((eb) => eb(eb.fn.coalesce("ingested_at", "started_at"), "<", ago(STALE_UPLOAD_MS)))
    .execute();
  await db
    .updateTable("recording_exports")
    .set({
      status: "failed",
      error: "the export was interrupted (its api went away)",
      finished_at: new Date(),
    })
    .where("status", "in", ["queued", "running"])
    .where("created_at", "<", ago(EXPORT_ABANDONED_MS))
    .execute();
  await applyRetention(deps);
}

/**
 * Per workspace with a retention policy: finished recordings started more than `retention_days`
 * ago go, then the oldest finished ones while the workspace's recordings exceed
 * `retention_bytes`. Recordings still being made are counted but never deleted. One audit entry
 * per workspace and round names what went.
 */
async function applyRetention(deps: RecordingHousekeepingDeps): Promise<void> {
  const { db } = deps.database;
  const policies = await db
    .selectFrom("workspace_recording_policies")
    .select(["workspace_id", "retention_days", "retention_bytes"])
    .where((eb) => eb.or([eb("retention_days", "is not", null), eb("retention_bytes", "is not", null)]))
    .execute();
  for (const policy of policies) {
    const doomed = await doomedRecordings(db, policy);
    if (doomed.length === 0) continue;
    for (const recording of doomed) await deps.recordings.remove(recording.id);
    await deps.audit.record({
      actor: SYSTEM_ACTOR,
      workspaceId: policy.workspace_id,
      action: "recording.pruned",
      target: { type: "workspace", id: policy.workspace_id },
      data: {
        recordingIds: doomed.map((recording) => recording.id),
        bytes: doomed.reduce((sum, recording) => sum + recording.bytes, 0),
        retentionDays: policy.retention_days,
        retentionBytes: policy.retention_bytes,
      },
    });
  }
}

async function doomedRecordings(
  db: Kysely<Database>,
  policy: { workspace_id: string; retention_days: number | null; retention_bytes: number | null },
): Promise<Array<{ id: string; bytes: number }>> {
  const recordings = await db
    .selectFrom("recordings")
    .select([
      "id",
      "bytes",
      "status",
      sql<boolean>`started_at < now() - cast(${policy.retention_days ?? 0} as integer) * interval '1 day'`.as(
        "expired",
      ),
    ])
    .where("workspace_id", "=", policy.workspace_id)
    .where("status", "!=", "pending")
    .orderBy("started_at")
    .orderBy("id")
    .execute();
  const finished = recordings.filter((r) => r.status === "complete" || r.status === "incomplete");
  const doomed = policy.retention_days === null ? [] : finished.filter((r) => r.expired);
  if (policy.retention_bytes !== null) {
    const gone = new Set(doomed.map((r) => r.id));
    let total = recordings.reduce((sum, r) => sum + (gone.has(r.id) ? 0 : r.bytes), 0);
    for (const recording of finished) {
      if (total <= policy.retention_bytes) break;
      if (gone.has(recording.id)) continue;
      doomed.push(recording);
      total -= recording.bytes;
    }
  }
  return doomed.map(({ id, bytes }) => ({ id, bytes }));
}
