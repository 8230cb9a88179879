/**
 * Daytona's control-plane REST API (`/api`), the routes the SDK's SandboxApi calls for the
 * lifecycle of a sandbox. Every route needs `Authorization: Bearer <apiKey>`. A lifecycle call
 * answers once the container has changed, with the state it reached.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { cpus, totalmem } from "node:os";
import { BadBody, readJsonObject, sendJson } from "../http/body.ts";
import { type Route, serveRoutes } from "../http/routes.ts";
import { MachineMissing } from "../machines/index.ts";
import { DaytonaHttpError, errorBody, notFound } from "./errors.ts";
import { createdSettings, updatedSettings } from "./network.ts";
import { previewUrl } from "./preview.ts";
import { NameTaken, type SandboxRegistry } from "./registry.ts";
import type { Sandbox } from "./sandbox.ts";
import { SANDBOX_USER } from "./user.ts";

/** The one snapshot the emulator has: its image reproduces Daytona's default sandbox. */
export const DEFAULT_SNAPSHOT = "daytona-desktop";
const ORGANIZATION_ID = "cubicle-emulator";
const DAEMON_VERSION = "0.218.0";
/** Daytona's defaults, in minutes. */
const DEFAULT_AUTO_STOP = 15;
const DEFAULT_AUTO_ARCHIVE = 7 * 24 * 60;

export interface ControlPlane {
  registry: SandboxRegistry;
  target: string;
  /** http://host:port of the emulator, for the URLs it hands out. */
  origin: string;
}

const ROUTES: Route<ControlPlane>[] = [
  ["POST", /^\/sandbox$/, createSandbox],
  ["GET", /^\/sandbox\/([^/]+)$/, async (plane, _req, [id]) => [200, dtoOf(plane, sandboxOf(plane, id))]],
  ["DELETE", /^\/sandbox\/([^/]+)$/, deleteSandbox],
  ["POST", /^\/sandbox\/([^/]+)\/start$/, startSandbox],
  ["POST", /^\/sandbox\/([^/]+)\/stop$/, stopSandbox],
  ["POST", /^\/sandbox\/([^/]+)\/last-activity$/, refreshActivity],
  ["POST", /^\/sandbox\/([^/]+)\/network-settings$/, setNetworkSettings],
  ["POST", /^\/sandbox\/([^/]+)\/autostop\/(\d+)$/, setAutoStop],
  [
    "GET",
    /^\/sandbox\/([^/]+)\/toolbox-proxy-url$/,
    async (plane) => [200, { url: `${plane.origin}/toolbox` }],
  ],
  ["GET", /^\/sandbox\/([^/]+)\/ports\/(\d+)\/preview-url$/, previewLink],
];

export async function serveControlPlane(
  plane: ControlPlane,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const served = await serveRoutes(ROUTES, plane, path, req, res, (error) => {
    const answer =
      error instanceof DaytonaHttpError
        ? error
        : error instanceof BadBody
          ? new DaytonaHttpError(400, error.message, "BAD_REQUEST")
          : error instanceof MachineMissing
            ? notFound("Sandbox not found")
            : new DaytonaHttpError(500, error instanceof Error ? error.message : String(error));
    return [answer.status, errorBody(answer, req)];
  });
  if (!served) sendJson(res, 404, errorBody(notFound(`Cannot ${req.method} /api${path}`), req));
}

function sandboxOf(plane: ControlPlane, idOrName: string | undefined): Sandbox {
  const sandbox = plane.registry.get(decodeURIComponent(idOrName ?? ""));
  if (!sandbox) throw notFound(`Sandbox with ID or name ${idOrName} not found`);
  return sandbox;
}

/** The SandboxDto: what the SDK reads from every lifecycle answer. */
function dtoOf(plane: ControlPlane, sandbox: Sandbox) {
  const { record } = sandbox;
  return {
    id: sandbox.id,
    organizationId: ORGANIZATION_ID,
    name: record.name,
    snapshot: DEFAULT_SNAPSHOT,
    user: SANDBOX_USER.name,
    env: record.env,
    labels: record.labels,
    public: record.public,
    ...sandbox.network,
    target: record.target,
    cpu: cpus().length,
    gpu: 0,
    memory: Math.round(totalmem() / 1024 ** 3),
    disk: 0,
    state: sandbox.state,
    desiredState: sandbox.state === "stopped" || sandbox.state === "stopping" ? "stopped" : "started",
    backupState: "None",
    autoStopInterval: sandbox.autoStopInterval,
    autoArchiveInterval: record.autoArchiveInterval,
    autoDeleteInterval: record.autoDeleteInterval,
    volumes: [],
    createdAt: sandbox.createdAt.toISOString(),
    updatedAt: sandbox.updatedAt.toISOString(),
    lastActivityAt: sandbox.lastActivityAt.toISOString(),
    daemonVersion: DAEMON_VERSION,
    toolboxProxyUrl: `${plane.origin}/toolbox`,
  };
}

function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value))
    throw new DaytonaHttpError(400, `${what} must be an object`);
  const map: Record<string, string> = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== "string") throw new DaytonaHttpError(400, `${what}.${key} must be a string`);
    map[key] = item;
  }
  return map;
}

function minutes(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isInteger(value) ? value : fallback;
}

async function createSandbox(plane: ControlPlane, req: IncomingMessage): Promise<[number, unknown]> {
  const body = await readJsonObject(req);
  if (body.buildInfo !== undefined || (body.snapshot !== undefined && body.snapshot !== DEFAULT_SNAPSHOT)) {
    throw new DaytonaHttpError(400, `the emulator has only the snapshot "${DEFAULT_SNAPSHOT}"`);
  }
  if (body.user !== undefined && body.user !== SANDBOX_USER.name) {
    throw new DaytonaHttpError(400, `the emulator's sandboxes have only the user "${SANDBOX_USER.name}"`);
  }
  const target = typeof body.target === "string" && body.target !== "" ? body.target : plane.target;
  if (target !== plane.target) throw new DaytonaHttpError(400, `Region ${target} not found`);
  // what the emulator would accept but not do
  if (body.outboundProxyUrl !== undefined && body.outboundProxyUrl !== "")
    throw new DaytonaHttpError(400, "the emulator has no outbound proxy: leave outboundProxyUrl out");
  const network = createdSettings(body);
  try {
    const sandbox = await plane.registry.create({
      ...(typeof body.name === "string" && body.name !== "" ? { name: body.name } : {}),
      labels: stringMap(body.labels, "labels"),
      env: stringMap(body.env, "env"),
      public: body.public === true,
      target,
      autoStopInterval: minutes(body.autoStopInterval, DEFAULT_AUTO_STOP),
      autoArchiveInterval: minutes(body.autoArchiveInterval, DEFAULT_AUTO_ARCHIVE),
      autoDeleteInterval: minutes(body.autoDeleteInterval, -1),
      network,
    });
    return [200, dtoOf(plane, sandbox)];
  } catch (error) {
    if (error instanceof NameTaken) throw new DaytonaHttpError(409, error.message, "CONFLICT");
    throw error;
  }
}

async function startSandbox(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  await plane.registry.start(sandbox);
  return [200, dtoOf(plane, sandbox)];
}

async function stopSandbox(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  await plane.registry.stop(sandbox);
  return [200, dtoOf(plane, sandbox)];
}

async function deleteSandbox(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  await plane.registry.delete(sandbox);
  return [200, dtoOf(plane, sandbox)];
}

/** The SDK's updateNetworkSettings: answered with the whole sandbox, which the SDK takes as its own. */
async function setNetworkSettings(
  plane: ControlPlane,
  req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  const body = await readJsonObject(req);
  await plane.registry.setNetwork(sandbox, (current) => updatedSettings(current, body));
  return [200, dtoOf(plane, sandbox)];
}

async function refreshActivity(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id]: string[],
): Promise<[number]> {
  plane.registry.touch(sandboxOf(plane, id));
  return [201];
}

async function setAutoStop(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id, interval]: string[],
): Promise<[number]> {
  const sandbox = sandboxOf(plane, id);
  sandbox.autoStopInterval = Number(interval);
  plane.registry.touch(sandbox);
  return [200];
}

async function previewLink(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id, port]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  const token = sandbox.previewToken;
  if (!token) throw new DaytonaHttpError(400, `Sandbox ${sandbox.id} is not started`, "BAD_REQUEST");
  return [200, { sandboxId: sandbox.id, url: previewUrl(plane.origin, sandbox.id, Number(port)), token }];
}
