import type { Checkpoint } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import { COMPUTERS, computerOf, PROVIDER_PROBLEMS } from "../computers/http.ts";
import type { AppEnv } from "../context.ts";
import { iso } from "../http/iso.ts";
import { binaryResponse, jsonResponse as json, pathParam } from "../http/openapi.ts";
import { ComputerParams } from "../http/params.ts";
import { createRouter } from "../http/router.ts";
import { restoreRevision } from "../restore/restore.ts";
import { pendingRetry } from "./retries.ts";
import { CHECKPOINT_REASONS } from "./store/index.ts";

const CheckpointSchema = z
  .object({
    id: z.string().openapi({ description: "Sorts by time: a later checkpoint has a greater id." }),
    computerId: z.string(),
    parentId: z.string().nullable().openapi({ description: "The computer's previous checkpoint." }),
    reason: z.enum(CHECKPOINT_REASONS),
    sizeBytes: z.number().int().openapi({ description: "Bytes of file contents in the home." }),
    fileCount: z.number().int(),
    newBytes: z
      .number()
      .int()
      .openapi({ description: "Content this checkpoint added to storage (files are stored once)." }),
    sha256: z.string().openapi({ description: "Checksum of the revision's sorted list of entries." }),
    createdAt: z.string().datetime(),
  })
  .openapi("Checkpoint");

const CheckpointList = z
  .object({
    items: z.array(CheckpointSchema),
    retry: z
      .object({
        reason: z.enum(CHECKPOINT_REASONS),
        attempts: z.number().int(),
        lastError: z.string(),
        nextAttemptAt: z.string().datetime(),
      })
      .nullable()
      .openapi({ description: "A checkpoint that failed and will be tried again." }),
  })
  .openapi("CheckpointList");

const CheckpointParams = ComputerParams.extend({ checkpointId: pathParam("checkpointId") });
const CHECKPOINTS = `${COMPUTERS}/{computerId}/checkpoints`;
const tags = ["Checkpoints"];

const listCheckpoints = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "listCheckpoints",
    method: "get",
    path: CHECKPOINTS,
    summary: "The computer's checkpoints, newest first",
    description:
      "Kept: the newest CHECKPOINT_KEEP_LAST (default 20) and the newest of each of the last " +
      "CHECKPOINT_KEEP_DAILY_DAYS days (default 14).",
    tags,
    request: { params: ComputerParams },
    responses: { 200: json("OK", CheckpointList) },
  },
);

const getCheckpoint = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getCheckpoint",
    method: "get",
    path: `${CHECKPOINTS}/{checkpointId}`,
    summary: "One checkpoint of the computer",
    tags,
    request: { params: CheckpointParams },
    responses: { 200: json("OK", CheckpointSchema) },
  },
);

const createCheckpoint = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "createCheckpoint",
    method: "post",
    path: CHECKPOINTS,
    summary: "Checkpoint the computer's home now",
    description:
      "Records the home as a new revision (reason `manual`); only content not stored before costs " +
      "space. Browsers keep running: the checkpoint waits for them to write what they hold in " +
      "memory (Chromium writes cookies up to 30 s late), so it includes every change made before it.",
    tags,
    request: { params: ComputerParams },
    responses: {
      201: json("Taken", CheckpointSchema),
      409: { description: "The computer has no machine (NO_MACHINE)" },
      502: PROVIDER_PROBLEMS[502],
      507: { description: "The checkpoint store is full (CHECKPOINT_STORE_FULL); nothing was kept" },
      503: PROVIDER_PROBLEMS[503],
    },
  },
);

const restoreCheckpoint = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "restoreCheckpoint",
    method: "post",
    path: `${CHECKPOINTS}/{checkpointId}/restore`,
    summary: "Put a checkpoint back",
    description:
      "`into: current` replaces the running machine's home (its browsers are closed first and the " +
      "home as it was is kept as a `before-restore` checkpoint); `into: fresh` does the same on a new " +
      "machine, the old one removed. Other checkpoints stay. Refused with COMPUTER_BUSY while sessions " +
      "are open on the computer.",
    tags,
    request: {
      params: CheckpointParams,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.object({ into: z.enum(["current", "fresh"]) }).openapi("CheckpointRestore"),
          },
        },
      },
    },
    responses: {
      200: json("Restored; the computer is running", z.object({ computerId: z.string(), state: z.string() })),
      ...PROVIDER_PROBLEMS,
    },
  },
);

const downloadCheckpoint = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "downloadCheckpoint",
    method: "get",
    path: `${CHECKPOINTS}/{checkpointId}/archive`,
    summary: "Download a checkpoint as a tar of the home",
    description: "Names in the archive are relative to the home. Admins and owners only; audited.",
    tags,
    request: { params: CheckpointParams },
    responses: { 200: binaryResponse("The home", "application/x-tar") },
  },
);

export function checkpointRoutes() {
  return createRouter()
    .openapi(listCheckpoints, async (c) => {
      const computer = await computerOf(c);
      const checkpoints = c.var.deps.checkpoints;
      const [items, retry] = await Promise.all([
        checkpoints.list(computer.id),
        pendingRetry(c.var.deps.database.db, computer.id),
      ]);
      return c.json(
        {
          items: items.map(checkpointBody),
          retry: retry
            ? {
                reason: retry.reason,
                attempts: retry.attempts,
                lastError: retry.last_error,
                nextAttemptAt: iso(retry.next_attempt_at),
              }
            : null,
        },
        200,
      );
    })
    .openapi(getCheckpoint, async (c) => c.json(checkpointBody((await checkpointOf(c)).checkpoint), 200))
    .openapi(createCheckpoint, async (c) => {
      const { deps } = c.var;
      const computer = await computerOf(c);
      const taken = await deps.checkpoints.takeNow(computer, actorOf(c.var.principal));
      return c.json(checkpointBody(taken), 201);
    })
    .openapi(restoreCheckpoint, async (c) => {
      const { deps } = c.var;
      const { computer, checkpoint } = await checkpointOf(c);
      const restored = await restoreRevision(
        deps,
        computer,
        checkpoint,
        c.req.valid("json").into,
        actorOf(c.var.principal),
      );
      return c.json({ computerId: restored.id, state: restored.state }, 200);
    })
    .openapi(downloadCheckpoint, async (c) => {
      const { deps } = c.var;
      const { computer, checkpoint } = await checkpointOf(c);
      const archive = await deps.checkpoints.archive(computer, checkpoint);
      await deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId: computer.workspace_id,
        action: "checkpoint.downloaded",
        target: { type: "computer", id: computer.id },
        data: { checkpointId: checkpoint.id },
      });
      return c.body(archive, 200, {
        "content-type": "application/x-tar",
        "content-disposition": `attachment; filename="${computer.home_key}-${checkpoint.id}.tar"`,
        "cache-control": "no-store",
      });
    });
}

async function checkpointOf(c: Context<AppEnv>) {
  const computer = await computerOf(c);
  const checkpoint = await c.var.deps.checkpoints.require(computer.id, c.req.param("checkpointId") ?? "");
  return { computer, checkpoint };
}

function checkpointBody(row: Checkpoint): z.infer<typeof CheckpointSchema> {
  return {
    id: row.id,
    computerId: row.computer_id,
    parentId: row.parent_id,
    reason: row.reason,
    sizeBytes: row.size_bytes,
    fileCount: row.file_count,
    newBytes: row.new_bytes,
    sha256: row.sha256,
    createdAt: iso(row.created_at),
  };
}
