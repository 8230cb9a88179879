import { MAX_RECORD_AT, RECORDING_FILE_MAGIC } from "@cubicle/proxy/recording";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { binaryResponse, jsonResponse as json, pathParam } from "../http/openapi.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { listRecordings, requireRecording } from "./catalogue.ts";
import { frameAt, inputsOf, RecordingDecodeError } from "./decode/index.ts";
import { RecordingPolicySchema, recordingPolicyOf, setRecordingPolicy } from "./policy.ts";
import { recordingBytes, recordingRecords } from "./reader.ts";
import {
  exportBody,
  RecordingExportSchema,
  RecordingInputSchema,
  RecordingSchema,
  recordingBody,
} from "./schemas.ts";

export const RECORDING_CONTENT_TYPE = "application/vnd.cubicle.recording";

const RECORDINGS = "/v1/workspaces/{workspaceId}/recordings";
const RecordingParams = WorkspaceIdParam.extend({ recordingId: pathParam("recordingId") });
const ExportParams = RecordingParams.extend({ exportId: pathParam("exportId") });
const tags = ["Recordings"];
/** Recordings show what people typed and what bots saw: admins and owners only. */
const ADMINS = { kind: "workspace", minRole: "admin" } as const;

const RecordingList = z
  .object({ items: z.array(RecordingSchema), nextCursor: z.string().nullable() })
  .openapi("RecordingList");

const ListQuery = z.object({
  computerId: z.string().max(64).optional(),
  sessionId: z.string().max(64).optional(),
  controlLeaseId: z.string().max(64).optional(),
  status: z.enum(["recording", "complete", "incomplete"]).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

const listRoute = defineRoute(ADMINS, {
  operationId: "listRecordings",
  method: "get",
  path: RECORDINGS,
  summary: "The workspace's recordings, newest first",
  tags,
  request: { params: WorkspaceIdParam, query: ListQuery },
  responses: { 200: json("OK", RecordingList) },
});

const getRoute = defineRoute(ADMINS, {
  operationId: "getRecording",
  method: "get",
  path: `${RECORDINGS}/{recordingId}`,
  summary: "One recording",
  tags,
  request: { params: RecordingParams },
  responses: { 200: json("OK", RecordingSchema) },
});

const contentRoute = defineRoute(ADMINS, {
  operationId: "readRecordingContent",
  method: "get",
  path: `${RECORDINGS}/{recordingId}/content`,
  summary: "The recording as a file: its header line, then its records",
  description:
    "Streamed as stored (a recording still being made, up to its last stored chunk). Audited as " +
    "`recording.played`, or with `download=1` as `recording.downloaded` and sent as an attachment.",
  tags,
  request: {
    params: RecordingParams,
    query: z.object({ download: z.enum(["0", "1"]).optional() }),
  },
  responses: { 200: binaryResponse("The recording", RECORDING_CONTENT_TYPE) },
});

const inputsRoute = defineRoute(ADMINS, {
  operationId: "listRecordingInputs",
  method: "get",
  path: `${RECORDINGS}/{recordingId}/inputs`,
  summary: "What the person typed and clicked during a control recording",
  tags,
  request: { params: RecordingParams },
  responses: {
    200: json("OK", z.object({ inputs: z.array(RecordingInputSchema) }).openapi("RecordingInputList")),
  },
});

const frameRoute = defineRoute(ADMINS, {
  operationId: "getRecordingFrame",
  method: "get",
  path: `${RECORDINGS}/{recordingId}/frame`,
  summary: "The screen as it was at a moment of the recording, as a PNG",
  description: "Audited as `recording.played` with the moment. Without `at`, the last picture.",
  tags,
  request: {
    params: RecordingParams,
    query: z.object({
      at: z.coerce.number().int().min(0).max(MAX_RECORD_AT).optional().openapi({
        description: "Milliseconds since the recording began; the recording's end when left out.",
      }),
    }),
  },
  responses: { 200: binaryResponse("The frame", "image/png") },
});

const createExportRoute = defineRoute(ADMINS, {
  operationId: "createRecordingExport",
  method: "post",
  path: `${RECORDINGS}/{recordingId}/exports`,
  summary: "Make a video of the recording, in the background",
  description: "Poll the export for its progress; download it once `ready`. Audited.",
  tags,
  request: {
    params: RecordingParams,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z.object({ format: z.enum(["webm"]) }).openapi("RecordingExportRequest"),
        },
      },
    },
  },
  responses: { 202: json("Queued", RecordingExportSchema) },
});

const getExportRoute = defineRoute(ADMINS, {
  operationId: "getRecordingExport",
  method: "get",
  path: `${RECORDINGS}/{recordingId}/exports/{exportId}`,
  summary: "An export's status and progress",
  tags,
  request: { params: ExportParams },
  responses: { 200: json("OK", RecordingExportSchema) },
});

const downloadExportRoute = defineRoute(ADMINS, {
  operationId: "downloadRecordingExport",
  method: "get",
  path: `${RECORDINGS}/{recordingId}/exports/{exportId}/content`,
  summary: "Download an export's video",
  description: "Audited as `recording.downloaded`.",
  tags,
  request: { params: ExportParams },
  responses: {
    200: binaryResponse("The video", "video/webm"),
    409: { description: "The export is not ready (EXPORT_NOT_READY)" },
  },
});

const deleteRoute = defineRoute(
  { ...ADMINS, people: true },
  {
    operationId: "deleteRecording",
    method: "delete",
    path: `${RECORDINGS}/{recordingId}`,
    summary: "Delete a recording, its index and its videos",
    description: "Audited. A recording still being made cannot be deleted.",
    tags,
    request: { params: RecordingParams },
    responses: {
      204: { description: "Deleted" },
      409: { description: "The recording is still being made (RECORDING_IN_PROGRESS)" },
    },
  },
);

const POLICY = "/v1/workspaces/{workspaceId}/recording-policy";

const getPolicyRoute = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getRecordingPolicy",
    method: "get",
    path: POLICY,
    summary: "What the workspace records, and how long it keeps it",
    description: "Any member may read it: screens show a mark while they are recorded.",
    tags,
    request: { params: WorkspaceIdParam },
    responses: { 200: json("OK", RecordingPolicySchema) },
  },
);

const setPolicyRoute = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "setRecordingPolicy",
    method: "put",
    path: POLICY,
    summary: "Set what the workspace records, and how long it keeps it",
    description:
      "Takes effect for control granted and sessions opened from now on; retention is applied within " +
      "minutes. A person sets it, never an API key: it is the oversight of what keys drive. Audited " +
      "with the policy before and after.",
    tags,
    request: {
      params: WorkspaceIdParam,
      body: { required: true, content: { "application/json": { schema: RecordingPolicySchema } } },
    },
    responses: { 200: json("Set", RecordingPolicySchema) },
  },
);

export function recordingRoutes() {
  return createRouter()
    .openapi(listRoute, async (c) => {
      const page = await listRecordings(
        c.var.deps.database.db,
        c.var.workspace.workspaceId,
        c.req.valid("query"),
      );
      return c.json({ items: page.items.map(recordingBody), nextCursor: page.nextCursor }, 200);
    })
    .openapi(getRoute, async (c) => c.json(recordingBody(await recordingOf(c)), 200))
    .openapi(contentRoute, async (c) => {
      const recording = await recordingOf(c);
      const download = c.req.valid("query").download === "1";
      await audit(c, download ? "recording.downloaded" : "recording.played", recording.id);
      const deps = readerDeps(c);
      async function* file(): AsyncGenerator<Uint8Array> {
        yield new TextEncoder().encode(RECORDING_FILE_MAGIC);
        yield* recordingBytes(deps, recording.id);
      }
      return c.body(streamOf(file()), 200, {
        "content-type": RECORDING_CONTENT_TYPE,
        "cache-control": "no-store",
        ...(download
          ? { "content-disposition": `attachment; filename="recording-${recording.id}.cubicle-rec"` }
          : {}),
      });
    })
    .openapi(inputsRoute, async (c) => {
      const recording = await recordingOf(c);
      const inputs = await undecodable(() => inputsOf(recordingRecords(readerDeps(c), recording.id)));
      return c.json({ inputs }, 200);
    })
    .openapi(frameRoute, async (c) => {
      const recording = await recordingOf(c);
      const at = c.req.valid("query").at ?? Number(recording.duration_ms);
      // the decoder reads the records only as far as the moment
      const frame = await undecodable(() => frameAt(recordingRecords(readerDeps(c), recording.id), at));
      await audit(c, "recording.played", recording.id, { at });
      return c.body(new Uint8Array(frame.png), 200, {
        "content-type": "image/png",
        "cache-control": "no-store",
      });
    })
    .openapi(createExportRoute, async (c) => {
      const recording = await recordingOf(c);
      const actor = actorOf(c.var.principal);
      const row = await c.var.deps.recordings.exports.request(
        recording,
        actor.label ?? actor.id ?? actor.type,
      );
      await audit(c, "recording.export_requested", recording.id, { exportId: row.id, format: row.format });
      return c.json(exportBody(row), 202);
    })
    .openapi(getExportRoute, async (c) => c.json(exportBody(await exportOf(c)), 200))
    .openapi(downloadExportRoute, async (c) => {
      const row = await exportOf(c);
      if (row.status !== "ready")
        throw new HttpProblem(409, "EXPORT_NOT_READY", `The export is ${row.status}, not ready.`);
      await audit(c, "recording.downloaded", row.recording_id, { exportId: row.id });
      return c.body(streamOf(c.var.deps.recordings.store.openExport(row.recording_id, row.id)), 200, {
        "content-type": "video/webm",
        "content-disposition": `attachment; filename="recording-${row.recording_id}.webm"`,
        "cache-control": "no-store",
      });
    })
    .openapi(deleteRoute, async (c) => {
      const recording = await recordingOf(c);
      if (recording.status === "recording")
        throw new HttpProblem(409, "RECORDING_IN_PROGRESS", "The recording is still being made.");
      await c.var.deps.recordings.remove(recording.id);
      await audit(c, "recording.deleted", recording.id, {
        computerId: recording.computer_id,
        startedAt: recording.started_at,
        bytes: recording.bytes,
      });
      return c.body(null, 204);
    })
    .openapi(getPolicyRoute, async (c) =>
      c.json(await recordingPolicyOf(c.var.deps.database.db, c.var.workspace.workspaceId), 200),
    )
    .openapi(setPolicyRoute, async (c) => {
      const policy = c.req.valid("json");
      await setRecordingPolicy(c.var.deps, c.var.workspace.workspaceId, policy, actorOf(c.var.principal));
      return c.json(policy, 200);
    });
}

const recordingOf = (c: Context<AppEnv>) =>
  requireRecording(c.var.deps.database.db, c.var.workspace.workspaceId, c.req.param("recordingId") ?? "");

async function exportOf(c: Context<AppEnv>) {
  const recording = await recordingOf(c);
  const row = await c.var.deps.database.db
    .selectFrom("recording_exports")
    .selectAll()
    .where("id", "=", c.req.param("exportId") ?? "")
    .where("recording_id", "=", recording.id)
    .executeTakeFirst();
  if (!row) throw notFound("export");
  return row;
}

const readerDeps = (c: Context<AppEnv>) => ({
  db: c.var.deps.database.db,
  store: c.var.deps.recordings.store,
});

/** What the decoder cannot read is the recording's fault, said as such (422), not the api's. */
async function undecodable<T>(decode: () => T | Promise<T>): Promise<T> {
  try {
    return await decode();
  } catch (error) {
    if (error instanceof RecordingDecodeError)
      throw new HttpProblem(
        422,
        "RECORDING_UNDECODABLE",
        `The recording cannot be decoded: ${error.message}`,
      );
    throw error;
  }
}

function audit(c: Context<AppEnv>, action: string, recordingId: string, data: Record<string, unknown> = {}) {
  return c.var.deps.audit.record({
    actor: actorOf(c.var.principal),
    workspaceId: c.var.workspace.workspaceId,
    action,
    target: { type: "recording", id: recordingId },
    data: { recordingId, ...data },
  });
}

/** An async generator as a response body, pulled as the client reads (a recording may be large). */
function streamOf(parts: AsyncGenerator<Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await parts.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (error) {
        controller.error(error);
      }
    },
    async cancel() {
      await parts.return(undefined);
    },
  });
}
