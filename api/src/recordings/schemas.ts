import {
  RECORDING_EXPORT_STATUSES,
  RECORDING_KINDS,
  type Recording,
  type RecordingExport,
} from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import { iso, isoOrNull } from "../http/iso.ts";

export const RecordingSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    computerId: z.string(),
    screen: z.number().int(),
    kind: z.enum(RECORDING_KINDS).openapi({
      description:
        "`control`: a person's control of the screen. `session`: a bot's screen during its session.",
    }),
    sessionId: z.string().nullable(),
    controlLeaseId: z.string().nullable(),
    botId: z.string().nullable(),
    actor: z
      .object({ type: z.enum(["user", "api_key"]), id: z.string(), name: z.string() })
      .openapi({ description: "The person who took control, or whoever held the session." }),
    status: z.enum(["recording", "complete", "incomplete"]),
    incompleteReason: z.string().nullable(),
    startedAt: z.string().datetime().nullable(),
    endedAt: z.string().datetime().nullable(),
    durationMs: z.number().int(),
    bytes: z.number().int(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
  })
  .openapi("Recording");

const at = z.number().int().openapi({ description: "Milliseconds since the recording began." });
const point = { x: z.number().int(), y: z.number().int() };

export const RecordingInputSchema = z
  .discriminatedUnion("type", [
    z
      .object({ at, type: z.literal("text"), text: z.string() })
      .openapi({ description: "Printable keys typed in a row." }),
    z
      .object({ at, type: z.literal("key"), key: z.string() })
      .openapi({ description: "`Enter`, `Ctrl+C`, `BackSpace`, `F5`…" }),
    z.object({ at, type: z.literal("click"), button: z.enum(["left", "middle", "right"]), ...point }),
    z.object({ at, type: z.literal("scroll"), direction: z.enum(["up", "down", "left", "right"]), ...point }),
    z
      .object({ at, type: z.literal("paste"), length: z.number().int() })
      .openapi({ description: "Clipboard text sent to the screen; its content is not listed." }),
  ])
  .openapi("RecordingInput");

export const RecordingExportSchema = z
  .object({
    id: z.string(),
    recordingId: z.string(),
    format: z.enum(["webm"]),
    status: z.enum(RECORDING_EXPORT_STATUSES),
    progress: z.number().min(0).max(1),
    bytes: z.number().int().nullable(),
    error: z.string().nullable(),
    createdAt: z.string().datetime(),
    finishedAt: z.string().datetime().nullable(),
  })
  .openapi("RecordingExport");

export function recordingBody(row: Recording): z.infer<typeof RecordingSchema> {
  if (row.status === "pending") throw new Error("a pending recording is never shown");
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    computerId: row.computer_id,
    screen: row.screen,
    kind: row.kind,
    sessionId: row.session_id,
    controlLeaseId: row.control_lease_id,
    botId: row.bot_id,
    actor: { type: row.actor_type, id: row.actor_id, name: row.actor_name },
    status: row.status,
    incompleteReason: row.incomplete_reason,
    startedAt: isoOrNull(row.started_at),
    endedAt: isoOrNull(row.ended_at),
    durationMs: row.duration_ms,
    bytes: row.bytes,
    width: row.width,
    height: row.height,
  };
}

export function exportBody(row: RecordingExport): z.infer<typeof RecordingExportSchema> {
  return {
    id: row.id,
    recordingId: row.recording_id,
    format: row.format,
    status: row.status,
    progress: row.progress,
    bytes: row.bytes,
    error: row.error,
    createdAt: iso(row.created_at),
    finishedAt: isoOrNull(row.finished_at),
  };
}
