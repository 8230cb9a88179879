/**
 * E2B's control-plane REST API (api.e2b.app), the routes the SDK's SandboxApi calls. Every route
 * needs the `X-API-KEY`; errors are `{code, message}` as E2B's API answers them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { cpus, totalmem } from "node:os";
import { BadBody, readJsonObject, sendJson } from "../http/body.ts";
import { type Route, serveRoutes } from "../http/routes.ts";
import { MachineMissing } from "../machines/index.ts";
import { BadNetwork, networkOfCreate, networkOfUpdate } from "./network.ts";
import type { NewSandbox, SandboxRegistry } from "./registry.ts";
import type { Sandbox } from "./sandbox.ts";

/** The only template this emulator has: its image reproduces E2B's `desktop`. */
export const DESKTOP_TEMPLATE = "desktop";
/** The envd version sandboxes report: 0.5.7 or later makes the SDK upload streams as octet-stream. */
export const ENVD_VERSION = "0.6.4";
/** E2B's default sandbox timeout (seconds) and the longest it allows. */
const DEFAULT_TIMEOUT_SECONDS = 300;
const MAX_TIMEOUT_SECONDS = 24 * 60 * 60;
/** Deprecated by E2B but still part of every answer. */
const CLIENT_ID = "cubicle-emulator";

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ControlPlane {
  apiKey: string;
  registry: SandboxRegistry;
}

const ROUTES: Route<ControlPlane>[] = [
  ["POST", /^\/v2\/sandboxes$/, createSandbox],
  ["GET", /^\/v2\/sandboxes$/, listSandboxes],
  ["POST", /^\/v2\/sandboxes\/([^/]+)\/connect$/, connectSandbox],
  ["GET", /^\/sandboxes\/([^/]+)$/, sandboxInfo],
  ["DELETE", /^\/sandboxes\/([^/]+)$/, killSandbox],
  ["POST", /^\/sandboxes\/([^/]+)\/pause$/, pauseSandbox],
  ["POST", /^\/sandboxes\/([^/]+)\/timeout$/, setSandboxTimeout],
  ["PUT", /^\/sandboxes\/([^/]+)\/network$/, updateSandboxNetwork],
];

export async function serveControlPlane(plane: ControlPlane, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? "/", "http://emulator");
  if (req.headers["x-api-key"] !== plane.apiKey) {
    sendJson(res, 401, { code: 401, message: "Invalid API key" });
    return;
  }
  const served = await serveRoutes(ROUTES, plane, url.pathname, req, res, (error) => {
    const status =
      error instanceof ApiError
        ? error.status
        : error instanceof BadBody || error instanceof BadNetwork
          ? 400
          : 500;
    return [status, { code: status, message: error instanceof Error ? error.message : String(error) }];
  });
  if (!served)
    sendJson(res, 404, { code: 404, message: `${req.method} ${url.pathname} is not an E2B API route` });
}

function sandboxOf(plane: ControlPlane, sandboxId: string | undefined): Sandbox {
  const sandbox = plane.registry.get(sandboxId ?? "");
  if (!sandbox)
    throw new ApiError(404, `sandbox "${sandboxId}" doesn't exist or you don't have access to it`);
  return sandbox;
}

/** A sandbox whose container vanished meanwhile is a 404, like one never made. */
async function orMissing<T>(sandbox: Sandbox, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (error instanceof MachineMissing) {
      throw new ApiError(404, `sandbox "${sandbox.id}" doesn't exist or you don't have access to it`);
    }
    throw error;
  }
}

/** The `Sandbox` schema: what create and connect answer. */
function connection(sandbox: Sandbox) {
  return {
    sandboxID: sandbox.id,
    templateID: sandbox.record.templateId,
    alias: sandbox.record.templateId,
    clientID: CLIENT_ID,
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.record.envdAccessToken,
    trafficAccessToken: sandbox.record.trafficAccessToken,
    domain: null,
  };
}

/** The `ListedSandbox` schema. */
function listed(sandbox: Sandbox) {
  return {
    sandboxID: sandbox.id,
    templateID: sandbox.record.templateId,
    alias: sandbox.record.templateId,
    clientID: CLIENT_ID,
    startedAt: sandbox.startedAt.toISOString(),
    endAt: sandbox.deadline.toISOString(),
    state: sandbox.state,
    cpuCount: cpus().length,
    memoryMB: Math.floor(totalmem() / 2 ** 20),
    diskSizeMB: 0,
    envdVersion: ENVD_VERSION,
    metadata: sandbox.record.metadata,
  };
}

async function createSandbox(plane: ControlPlane, req: IncomingMessage): Promise<[number, unknown]> {
  const body = await readJsonObject(req);
  if (typeof body.templateID !== "string") throw new ApiError(400, "templateID is required");
  if (body.templateID !== DESKTOP_TEMPLATE) {
    throw new ApiError(
      404,
      `template '${body.templateID}' not found (this emulator has '${DESKTOP_TEMPLATE}' only)`,
    );
  }
  const network = optionalObject(body.network, "network");
  const request: NewSandbox = {
    templateId: DESKTOP_TEMPLATE,
    metadata: stringMap(body.metadata, "metadata"),
    envVars: envVarsOf(body.envVars),
    timeoutSeconds: timeoutOf(body.timeout),
    autoPause: optionalBoolean(body.autoPause, "autoPause") ?? false,
    autoPauseMemory: optionalBoolean(body.autoPauseMemory, "autoPauseMemory") ?? true,
    allowPublicTraffic: optionalBoolean(network.allowPublicTraffic, "network.allowPublicTraffic") ?? true,
    network: networkOfCreate(body, withoutTeamFeatures(network)),
  };
  return [201, connection(await plane.registry.create(request))];
}

async function connectSandbox(
  plane: ControlPlane,
  req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const body = await readJsonObject(req);
  const timeoutSeconds = timeoutOf(body.timeout);
  const memory = optionalBoolean(body.memory, "memory") ?? true;
  const sandbox = sandboxOf(plane, id);
  const outcome = await orMissing(sandbox, () => plane.registry.connect(sandbox, timeoutSeconds, memory));
  return [outcome === "resumed" ? 201 : 200, connection(sandbox)];
}

async function pauseSandbox(plane: ControlPlane, req: IncomingMessage, [id]: string[]): Promise<[number]> {
  const keepMemory = optionalBoolean((await readJsonObject(req)).memory, "memory") ?? true;
  const sandbox = sandboxOf(plane, id);
  if (!(await orMissing(sandbox, () => plane.registry.pause(sandbox, keepMemory)))) {
    throw new ApiError(409, `Error pausing sandbox - sandbox '${sandbox.id}' is already paused`);
  }
  return [204];
}

async function setSandboxTimeout(
  plane: ControlPlane,
  req: IncomingMessage,
  [id]: string[],
): Promise<[number]> {
  const timeoutSeconds = timeoutOf((await readJsonObject(req)).timeout);
  const sandbox = sandboxOf(plane, id);
  // E2B looks the sandbox up among the running ones: a paused sandbox has no timeout to set
  if (sandbox.state !== "running") throw new ApiError(404, `sandbox "${sandbox.id}" is not running`);
  plane.registry.setTimeout(sandbox, timeoutSeconds);
  return [204];
}

/** E2B's live egress update: the body replaces the sandbox's egress settings; a paused sandbox is a 409. */
async function updateSandboxNetwork(
  plane: ControlPlane,
  req: IncomingMessage,
  [id]: string[],
): Promise<[number]> {
  const body = await readJsonObject(req);
  const sandbox = sandboxOf(plane, id);
  const network = networkOfUpdate(withoutTeamFeatures(body), sandbox.network);
  if (!(await orMissing(sandbox, () => plane.registry.updateNetwork(sandbox, network)))) {
    throw new ApiError(409, `sandbox "${sandbox.id}" is not running`);
  }
  return [204];
}

async function killSandbox(plane: ControlPlane, _req: IncomingMessage, [id]: string[]): Promise<[number]> {
  const sandbox = sandboxOf(plane, id);
  await orMissing(sandbox, () => plane.registry.kill(sandbox));
  return [204];
}

async function sandboxInfo(
  plane: ControlPlane,
  _req: IncomingMessage,
  [id]: string[],
): Promise<[number, unknown]> {
  const sandbox = sandboxOf(plane, id);
  return [
    200,
    {
      ...listed(sandbox),
      envdAccessToken: sandbox.record.envdAccessToken,
      domain: null,
      lifecycle: { onTimeout: sandbox.record.autoPause ? "pause" : "kill", autoResume: false },
      allowInternetAccess: sandbox.network.allowInternetAccess,
      network: {
        allowPublicTraffic: sandbox.record.trafficAccessToken === null,
        // E2B leaves out what was never set
        ...(sandbox.network.allowOut.length > 0 ? { allowOut: sandbox.network.allowOut } : {}),
        ...(sandbox.network.denyOut.length > 0 ? { denyOut: sandbox.network.denyOut } : {}),
      },
    },
  ];
}

/** GET /v2/sandboxes with the SDK's filters: `state=running,paused` and `metadata=<url-encoded k=v&…>`. */
async function listSandboxes(plane: ControlPlane, req: IncomingMessage): Promise<[number, unknown]> {
  const query = new URL(req.url ?? "/", "http://emulator").searchParams;
  const states = (query.get("state") ?? "running,paused").split(",");
  const wanted = [...new URLSearchParams(query.get("metadata") ?? "")].map(
    ([key, value]) => [decodeURIComponent(key), decodeURIComponent(value)] as const,
  );
  const sandboxes = plane.registry
    .list()
    .filter((sandbox) => states.includes(sandbox.state))
    .filter((sandbox) => wanted.every(([key, value]) => sandbox.record.metadata[key] === value));
  return [200, sandboxes.map(listed)];
}

/**
 * Header transforms (`rules`) and the SOCKS egress proxy are E2B features its teams get by a flag;
 * the emulator's team has neither, so they are refused as E2B refuses them then, never ignored.
 */
function withoutTeamFeatures(network: Record<string, unknown>): Record<string, unknown> {
  if (network.rules !== undefined && network.rules !== null) {
    throw new ApiError(400, "Network transform rules are not available for your team.");
  }
  if (network.egressProxy !== undefined && network.egressProxy !== null) {
    throw new ApiError(403, "Egress proxy is not available for your team.");
  }
  return network;
}

function timeoutOf(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_TIMEOUT_SECONDS;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    throw new ApiError(400, "timeout must be a whole number of seconds");
  }
  if (value > MAX_TIMEOUT_SECONDS) throw new ApiError(400, "Timeout cannot be greater than 24 hours");
  return value;
}

function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw new ApiError(400, `${name} must be a boolean`);
  return value;
}

function optionalObject(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw new ApiError(400, `${name} must be an object`);
  return value as Record<string, unknown>;
}

/** The sandbox's environment: it becomes the container's, so names and values must suit one. */
function envVarsOf(value: unknown): Record<string, string> {
  const envVars = stringMap(value, "envVars");
  for (const [name, entry] of Object.entries(envVars)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || entry.includes("\0")) {
      throw new ApiError(400, `invalid environment variable '${name}'`);
    }
  }
  return envVars;
}

function stringMap(value: unknown, name: string): Record<string, string> {
  const map = optionalObject(value, name);
  for (const [key, entry] of Object.entries(map)) {
    if (typeof entry !== "string") throw new ApiError(400, `${name}.${key} must be a string`);
  }
  return map as Record<string, string>;
}
