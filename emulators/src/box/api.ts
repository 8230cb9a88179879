/**
 * Box's REST API (`/api/box/v1`): the lifecycle of boxes and what runs in them. Every route needs
 * `Authorization: Bearer <apiKey>` (server.ts). Lifecycle calls answer at once (202) with the state
 * the box is in now; GET shows it move on.
 */
import type { IncomingMessage } from "node:http";
import type { Answer, Route } from "../http/routes.ts";
import type { Box } from "./box.ts";
import { commandStatus, runCommand } from "./commands.ts";
import { desktopAnswer } from "./desktop.ts";
import { BoxError, badRequest, boxNotFound, conflict } from "./errors.ts";
import { readFile, writeFile } from "./files.ts";
import type { BoxSettings, BoxType } from "./records.ts";
import type { BoxRegistry } from "./registry.ts";

/** One API request, its JSON body already read (server.ts keeps it for `requests()`). */
export interface ApiCall {
  registry: BoxRegistry;
  /** http://host:port of the emulator, for the desktop URLs it hands out. */
  origin: string;
  body: Record<string, unknown>;
  query: Record<string, string>;
}

export const ROUTES: Route<ApiCall>[] = [
  ["POST", /^\/boxes$/, createBox],
  [
    "GET",
    /^\/boxes\/([^/]+)$/,
    async (call, _req, [id]) => [200, { ok: true, type: "box.info", box: view(boxOf(call, id)) }],
  ],
  ["PATCH", /^\/boxes\/([^/]+)$/, updateBox],
  ["DELETE", /^\/boxes\/([^/]+)$/, deleteBox],
  ["POST", /^\/boxes\/([^/]+)\/stop$/, stopBox],
  ["POST", /^\/boxes\/([^/]+)\/resume$/, resumeBox],
  [
    "POST",
    /^\/boxes\/([^/]+)\/commands$/,
    async (call, _req, [id]) => [200, await runCommand(runnable(call, id), call.body)],
  ],
  [
    "GET",
    /^\/boxes\/([^/]+)\/commands\/([^/]+)$/,
    async (call, _req, [id, processId]) => [
      200,
      await commandStatus(runnable(call, id), processId ?? "", call.query),
    ],
  ],
  [
    "GET",
    /^\/boxes\/([^/]+)\/files$/,
    async (call, _req, [id]) => [200, await readFile(runnable(call, id), call.query)],
  ],
  [
    "PUT",
    /^\/boxes\/([^/]+)\/files$/,
    async (call, _req, [id]) => [200, await writeFile(runnable(call, id), call.body)],
  ],
  [
    "POST",
    /^\/boxes\/([^/]+)\/desktop$/,
    async (call, _req, [id]) => [
      200,
      desktopAnswer(
        runnable(call, id),
        call.query,
        call.body,
        call.origin,
        call.registry.timings.desktopProvisioningMs,
      ),
    ],
  ],
  ["GET", /^\/deletion-operations\/([^/]+)$/, deletionOperation],
];

/** The request bodies Box takes; a file's may be large (PUT /files). */
export function maxBodyBytes(method: string | undefined, path: string): number {
  return method === "PUT" && /^\/boxes\/[^/]+\/files$/.test(path) ? 16 * 1024 * 1024 : 1024 * 1024;
}

function boxOf(call: ApiCall, id: string | undefined): Box {
  const boxId = decodeURIComponent(id ?? "");
  const box = call.registry.get(boxId);
  if (!box) throw boxNotFound(boxId);
  return box;
}

/** The box, when it can run things now; otherwise Box's 409 for its state. */
function runnable(call: ApiCall, id: string | undefined): Box {
  const box = boxOf(call, id);
  switch (box.state) {
    case "ready":
      return box;
    case "provisioning":
      throw conflict("box_starting", `Box ${box.id} is still starting; retry once it is ready.`);
    case "archiving":
    case "archived":
      throw conflict("box_archived", `Box ${box.id} is archived; resume it first.`);
    case "deleting":
      throw conflict("box_deleting", `Box ${box.id} is being deleted.`);
    default:
      throw conflict("box_error", `Box ${box.id} failed.`);
  }
}

const SIZES: Record<BoxType, { vcpu: number; memoryGB: number; billingMultiplier: number }> = {
  small: { vcpu: 2, memoryGB: 4, billingMultiplier: 0.5 },
  default: { vcpu: 4, memoryGB: 8, billingMultiplier: 1 },
  large: { vcpu: 8, memoryGB: 16, billingMultiplier: 2 },
};

/** The Box object every lifecycle answer carries. */
export function view(box: Box) {
  const { settings } = box;
  return {
    id: box.id,
    name: settings.name,
    state: box.state,
    type: settings.type,
    ...SIZES[settings.type],
    noEnv: settings.noEnv,
    ttlSeconds: settings.ttlSeconds,
    archiveAfter: settings.archiveAfter,
    createdAt: box.createdAt.toISOString(),
    updatedAt: box.updatedAt.toISOString(),
    url: null,
    ip: box.state === "ready" ? box.ip : null,
    desktopAvailable: box.state === "ready",
    desktopUrl: null,
    snapshotAvailable: settings.snapshotCompletedAt !== null,
    snapshotCompletedAt: settings.snapshotCompletedAt,
    subdomain: null,
    environment: settings.noEnv ? null : "base",
    setupStatus: null,
    setupError: null,
  };
}

const MAX_TTL_SECONDS = 2_592_000;

/** `ttlSeconds`: an integer of 1 to 30 days, or null (or Box's legacy "infinite") for none. */
function ttl(value: unknown): number | null {
  if (value === null || value === "infinite") return null;
  if (typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_TTL_SECONDS)
    return value;
  throw badRequest("invalid_ttl", `ttlSeconds must be an integer from 1 to ${MAX_TTL_SECONDS}, or null.`);
}

function boxType(value: unknown, fallback: BoxType): BoxType {
  if (value === undefined || value === null) return fallback;
  if (value === "small" || value === "default" || value === "large") return value;
  throw badRequest("invalid_type", "type must be small, default or large.");
}

function boolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined || value === null || typeof value === "boolean") return value ?? undefined;
  throw badRequest("invalid_request", `${name} must be a boolean.`);
}

function name(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "" || value.length > 200) {
    throw badRequest("invalid_name", "name must be a non-empty string of at most 200 characters.");
  }
  return value;
}

/** Names Box keeps for the account's own secrets and its agent. */
const RESERVED_ENV = new Set([
  "ASCII_TOKEN",
  "ASCII_API_URL",
  "AGENT_ID",
  "PRODUCT_MODE",
  "ENVIRONMENT_ID",
  "BOX_ID",
  "SERVICE_PREVIEW_TOKEN",
  "BOX_CLI_TOKEN",
]);

/** A box's own env: at most 100 names of `[A-Za-z_][A-Za-z0-9_]{0,127}`, 64 KB, none reserved. */
function env(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  const invalid = (message: string) => badRequest("invalid_env", message);
  if (typeof value !== "object" || Array.isArray(value)) throw invalid("env must be an object of strings.");
  const entries = Object.entries(value);
  if (entries.length > 100) throw invalid("env may have at most 100 variables.");
  let bytes = 0;
  for (const [key, item] of entries) {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(key)) throw invalid(`${key} is not a valid variable name.`);
    if (RESERVED_ENV.has(key) || key.startsWith("ASCII_") || key.startsWith("BOX_")) {
      throw invalid(`${key} is reserved.`);
    }
    if (typeof item !== "string") throw invalid(`env.${key} must be a string.`);
    bytes += Buffer.byteLength(key) + Buffer.byteLength(item);
  }
  if (bytes > 64 * 1024) throw invalid("env may hold at most 64KB.");
  return Object.fromEntries(entries) as Record<string, string>;
}

/** Box's default name: the time of the create. */
function defaultName(now: Date): string {
  return `Box ${now.toISOString().slice(0, 16).replace("T", " ")}`;
}

async function createBox(call: ApiCall): Promise<Answer> {
  const { body } = call;
  const settings: BoxSettings = {
    name: name(body.name) ?? defaultName(new Date()),
    type: boxType(body.type, "default"),
    ttlSeconds: body.ttlSeconds === undefined ? 3600 : ttl(body.ttlSeconds),
    archiveAfter: null,
    noEnv: boolean(body.noEnv, "noEnv") ?? false,
    env: env(body.env),
    snapshotCompletedAt: null,
  };
  if (body.from !== undefined || body.setupScript !== undefined || (body.environment ?? "base") !== "base") {
    throw badRequest(
      "not_emulated",
      "The emulator has no snapshots, setup scripts or environments but base.",
    );
  }
  if (settings.ttlSeconds !== null) {
    settings.archiveAfter = new Date(Date.now() + settings.ttlSeconds * 1000).toISOString();
  }
  const box = await call.registry.create(settings);
  return [
    202,
    {
      ok: true,
      type: "box.created",
      status: "provisioning",
      ttlSeconds: settings.ttlSeconds,
      box: view(box),
    },
  ];
}

async function updateBox(call: ApiCall, _req: IncomingMessage, [id]: string[]): Promise<Answer> {
  const box = boxOf(call, id);
  const { body } = call;
  const changes = {
    ...(body.name !== undefined ? { name: name(body.name) } : {}),
    ...(body.ttlSeconds !== undefined ? { ttlSeconds: ttl(body.ttlSeconds) } : {}),
  };
  call.registry.update(box, changes);
  return [200, { ok: true, type: "box.info", box: view(box) }];
}

async function stopBox(call: ApiCall, _req: IncomingMessage, [id]: string[]): Promise<Answer> {
  const box = boxOf(call, id);
  if (box.state === "deleting") throw boxNotFound(box.id);
  call.registry.stop(box);
  return [202, { ok: true, type: "box.stopping", id: box.id, status: box.state, box: view(box) }];
}

async function resumeBox(call: ApiCall, _req: IncomingMessage, [id]: string[]): Promise<Answer> {
  const box = boxOf(call, id);
  const { body } = call;
  if (body.env !== undefined || body.environment !== undefined) {
    throw badRequest("not_emulated", "The emulator keeps a box's env and environment on resume.");
  }
  const noEnv = boolean(body.noEnv, "noEnv");
  call.registry.resume(box, {
    ...(noEnv !== undefined ? { noEnv } : {}),
    ...(body.ttlSeconds !== undefined ? { ttlSeconds: ttl(body.ttlSeconds) } : {}),
    ...(body.type !== undefined ? { type: boxType(body.type, box.settings.type) } : {}),
  });
  return [202, { ok: true, type: "box.resuming", id: box.id, status: "resuming", box: view(box) }];
}

const CONFIRM_HEADER = "x-ascii-confirm-delete";

async function deleteBox(call: ApiCall, req: IncomingMessage, [id]: string[]): Promise<Answer> {
  const box = boxOf(call, id);
  if (req.headers[CONFIRM_HEADER] !== box.id) {
    throw new BoxError(
      409,
      "confirm_delete_required",
      `Deleting a box needs the header X-Ascii-Confirm-Delete: ${box.id}.`,
    );
  }
  const operation = call.registry.delete(box);
  return [202, { ok: true, type: "box.deleting", operation }];
}

async function deletionOperation(call: ApiCall, _req: IncomingMessage, [id]: string[]): Promise<Answer> {
  const operation = call.registry.operation(decodeURIComponent(id ?? ""));
  if (!operation)
    throw new BoxError(404, "deletion_operation_not_found", `Deletion operation ${id} not found.`);
  return [200, { ok: true, type: "deletion_operation", operation }];
}
