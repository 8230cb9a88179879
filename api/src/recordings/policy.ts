import { type Database, RECORDING_MODES } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import type { Kysely } from "kysely";
import type { AuditActor, AuditLog } from "../audit/audit-log.ts";

export const RecordingPolicySchema = z
  .object({
    mode: z.enum(RECORDING_MODES).openapi({
      description:
        "`off`: nothing is recorded. `control`: every control socket (a person driving a screen). " +
        "`control-and-sessions`: those, and each bot's screen during its sessions.",
    }),
    retentionDays: z
      .number()
      .int()
      .min(1)
      .max(36_500)
      .nullable()
      .openapi({ description: "Recordings started longer ago are deleted; null keeps them." }),
    retentionBytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).nullable().openapi({
      description: "The oldest recordings are deleted while the workspace's exceed this; null: no cap.",
    }),
  })
  .openapi("RecordingPolicy");

export type RecordingPolicy = z.infer<typeof RecordingPolicySchema>;

const NO_RECORDING: RecordingPolicy = { mode: "off", retentionDays: null, retentionBytes: null };

/** The workspace's policy: nothing recorded until an admin says otherwise. */
export async function recordingPolicyOf(db: Kysely<Database>, workspaceId: string): Promise<RecordingPolicy> {
  const row = await db
    .selectFrom("workspace_recording_policies")
    .select(["mode", "retention_days", "retention_bytes"])
    .where("workspace_id", "=", workspaceId)
    .executeTakeFirst();
  return row
    ? { mode: row.mode, retentionDays: row.retention_days, retentionBytes: row.retention_bytes }
    : NO_RECORDING;
}

/** Stores the policy with its audit record (before and after), in one transaction. */
export function setRecordingPolicy(
  deps: { database: { db: Kysely<Database> }; audit: AuditLog },
  workspaceId: string,
  after: RecordingPolicy,
  actor: AuditActor,
): Promise<void> {
  return deps.database.db.transaction().execute(async (trx) => {
    const before = await recordingPolicyOf(trx, workspaceId);
    const values = {
      mode: after.mode,
      retention_days: after.retentionDays,
      retention_bytes: after.retentionBytes,
    };
    await trx
      .insertInto("workspace_recording_policies")
      .values({ workspace_id: workspaceId, ...values })
      .onConflict((oc) => oc.column("workspace_id").doUpdateSet({ ...values, updated_at: new Date() }))
      .execute();
    await deps.audit.record(
      {
        actor,
        workspaceId,
        action: "workspace.recording_policy_changed",
        target: { type: "workspace", id: workspaceId },
        data: { before, after },
      },
      trx,
    );
  });
}
