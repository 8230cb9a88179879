/**
 * envd, the daemon inside every E2B sandbox (port 49983), played from the host: its Connect
 * services (process, filesystem), /files and /health. Requests reach it the way the SDK sends them
 * with `sandboxUrl`: to this server with `E2b-Sandbox-Id` and `E2b-Sandbox-Port: 49983`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { BadBody, readBody, sendJson } from "../http/body.ts";
import { MachineMissing, MachineNotRunning } from "../machines/index.ts";
import {
  ConnectError,
  parseMessage,
  parseRequestEnvelope,
  ServerStream,
  sendUnary,
  sendUnaryError,
} from "./connect.ts";
import { serveFiles } from "./files.ts";
import { filesystemCall } from "./filesystem-service.ts";
import { connectProcess, processCall, type StreamCall, startProcess } from "./process-service.ts";
import type { SandboxRegistry } from "./registry.ts";
import type { Sandbox } from "./sandbox.ts";
import { userFromAuthorization } from "./users.ts";

export const ENVD_PORT = 49983;
/** envd's keepalive when the client names no Keepalive-Ping-Interval (the SDK sends 50 s). */
const DEFAULT_KEEPALIVE_SECONDS = 50;

const RPC_PATH = /^\/(process\.Process|filesystem\.Filesystem)\/([A-Za-z]+)$/;

/** What E2B's proxy answers for a sandbox that is paused, gone or never was. */
function sandboxUnavailable(res: ServerResponse, sandboxId: string): void {
  sendJson(res, 502, { sandboxId, code: 502, message: "The sandbox is not running or was not found" });
}

/** Engine failures as Connect errors; a container found gone makes the sandbox gone. */
function connectErrorOf(registry: SandboxRegistry, sandbox: Sandbox, error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (error instanceof BadBody) return new ConnectError("invalid_argument", error.message);
  if (error instanceof MachineMissing) registry.lost(sandbox);
  if (error instanceof MachineMissing || error instanceof MachineNotRunning) {
    return new ConnectError("unavailable", "the sandbox is not running");
  }
  return new ConnectError("internal", error instanceof Error ? error.message : String(error));
}

export async function serveEnvd(
  registry: SandboxRegistry,
  sandboxId: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const sandbox = registry.get(sandboxId);
  if (sandbox?.state !== "running") {
    sandboxUnavailable(res, sandboxId);
    return;
  }
  const url = new URL(req.url ?? "/", "http://envd");
  if (url.pathname === "/health" && req.method === "GET") {
    res.writeHead(204).end();
    return;
  }
  if (req.headers["x-access-token"] !== sandbox.record.envdAccessToken) {
    sendJson(res, 401, {
      code: 401,
      message: "unauthorized access, please provide a valid access token or method signing if supported",
    });
    return;
  }
  if (url.pathname === "/files") {
    await serveFiles(sandbox, url, req, res).catch((error: unknown) => {
      if (error instanceof MachineMissing) registry.lost(sandbox);
      throw error;
    });
    return;
  }
  const rpc = RPC_PATH.exec(url.pathname);
  if (!rpc || req.method !== "POST") {
    sendJson(res, 404, { code: 404, message: `${req.method} ${url.pathname} is not an envd route` });
    return;
  }
  const [, service, method = ""] = rpc;
  if (service === "process.Process" && (method === "Start" || method === "Connect")) {
    await serveStream(registry, sandbox, method, req, res);
  } else {
    await serveUnary(registry, sandbox, service === "process.Process", method, req, res);
  }
}

async function serveUnary(
  registry: SandboxRegistry,
  sandbox: Sandbox,
  isProcess: boolean,
  method: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  try {
    const message = parseMessage(await readBody(req));
    if (typeof message !== "object" || message === null) {
      throw new ConnectError("invalid_argument", "the request message must be a JSON object");
    }
    const fields = message as Record<string, unknown>;
    const result = isProcess
      ? await processCall(method, sandbox, fields)
      : await filesystemCall(
          method,
          sandbox,
          await sandbox.users.get(userFromAuthorization(req.headers.authorization)),
          fields,
        );
    sendUnary(res, result);
  } catch (error) {
    sendUnaryError(res, connectErrorOf(registry, sandbox, error));
  }
}

/** Start and Connect: errors go in the end-stream message, as the Connect protocol has them. */
async function serveStream(
  registry: SandboxRegistry,
  sandbox: Sandbox,
  method: "Start" | "Connect",
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let body: Buffer | null = null;
  let failure: unknown = null;
  try {
    body = await readBody(req);
  } catch (error) {
    failure = error;
  }
  const stream = new ServerStream(res);
  try {
    if (!body) throw failure;
    const message = parseRequestEnvelope(body);
    if (typeof message !== "object" || message === null) {
      throw new ConnectError("invalid_argument", "the request message must be a JSON object");
    }
    const call: StreamCall = {
      sandbox,
      user: await sandbox.users.get(userFromAuthorization(req.headers.authorization)),
      message: message as Record<string, unknown>,
      stream,
      timeoutMs: positiveNumber(req.headers["connect-timeout-ms"]),
      keepaliveMs:
        (positiveNumber(req.headers["keepalive-ping-interval"]) ?? DEFAULT_KEEPALIVE_SECONDS) * 1000,
    };
    await (method === "Start" ? startProcess(call) : connectProcess(call));
  } catch (error) {
    stream.end(connectErrorOf(registry, sandbox, error));
  }
}

function positiveNumber(header: string | string[] | undefined): number | null {
  const value = Number(Array.isArray(header) ? header[0] : header);
  return Number.isFinite(value) && value > 0 ? value : null;
}
