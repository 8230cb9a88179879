/**
 * The toolbox (`{toolboxProxyUrl}/{sandboxId}/…`): Daytona's proxy in front of the sandbox's
 * daemon, played from the host with `docker exec`. A sandbox that is not started is refused as the
 * proxy refuses it ("Is the Sandbox started?").
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketServer } from "ws";
import { BadBody, readJsonObject, sendJson } from "../http/body.ts";
import { refuseUpgrade } from "../machines/index.ts";
import * as computer from "./computer-use.ts";
import { badRequest, DaytonaHttpError, errorBody, notFound, notStarted, sendError } from "./errors.ts";
import { createFolder, deleteFile, downloadFiles, listFiles, uploadFiles } from "./files-routes.ts";
import { followCommandLogs } from "./logs-socket.ts";
import {
  commandInfo,
  commandLogs,
  createSession,
  executeCommand,
  executeSessionCommand,
  sessionInfo,
} from "./process-routes.ts";
import type { SandboxRegistry } from "./registry.ts";
import type { Sandbox } from "./sandbox.ts";
import { SANDBOX_USER } from "./user.ts";

type Route = (
  sandbox: Sandbox,
  req: IncomingMessage,
  res: ServerResponse,
  match: string[],
  url: URL,
) => Promise<unknown>;

const json =
  (handler: (sandbox: Sandbox, body: Record<string, unknown>) => Promise<unknown>): Route =>
  async (sandbox, req) =>
    handler(sandbox, await readJsonObject(req));

/** A route's answer: a value is sent as JSON (200); undefined means the route answered itself. */
const ROUTES: Array<[method: string, path: RegExp, route: Route]> = [
  ["POST", /^\/process\/execute$/, (sandbox, req, res) => executeCommand(sandbox, req, res)],
  ["POST", /^\/process\/session$/, (sandbox, req, res) => createSession(sandbox, req, res)],
  [
    "GET",
    /^\/process\/session$/,
    async (sandbox) => Promise.all(sandbox.sessions.list().map((s) => sessionInfo(sandbox, s))),
  ],
  [
    "GET",
    /^\/process\/session\/([^/]+)$/,
    async (sandbox, _req, _res, [id]) => sessionInfo(sandbox, sandbox.sessions.get(id ?? "")),
  ],
  [
    "DELETE",
    /^\/process\/session\/([^/]+)$/,
    async (sandbox, _req, res, [id]) => {
      await sandbox.sessions.delete(id ?? "");
      res.writeHead(204).end();
    },
  ],
  [
    "POST",
    /^\/process\/session\/([^/]+)\/exec$/,
    (sandbox, req, res, [id]) => executeSessionCommand(sandbox, id ?? "", req, res),
  ],
  [
    "GET",
    /^\/process\/session\/([^/]+)\/command\/([^/]+)$/,
    async (sandbox, _req, _res, [id, cmdId]) =>
      commandInfo(sandbox, sandbox.sessions.get(id ?? "").command(cmdId ?? "")),
  ],
  [
    "GET",
    /^\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/,
    async (sandbox, _req, res, [id, cmdId]) =>
      commandLogs(sandbox, sandbox.sessions.get(id ?? "").command(cmdId ?? ""), res),
  ],
  ["POST", /^\/files\/bulk-upload$/, (sandbox, req, res) => uploadFiles(sandbox, req, res)],
  [
    "POST",
    /^\/files\/bulk-download$/,
    async (sandbox, req, res) => downloadFiles(sandbox, await readJsonObject(req), res),
  ],
  [
    "GET",
    /^\/files$/,
    async (sandbox, _req, _res, _match, url) => listFiles(sandbox, url.searchParams.get("path") ?? ""),
  ],
  [
    "DELETE",
    /^\/files$/,
    async (sandbox, _req, res, _match, url) => {
      await deleteFile(
        sandbox,
        url.searchParams.get("path") ?? "",
        url.searchParams.get("recursive") === "true",
      );
      res.writeHead(204).end();
    },
  ],
  [
    "POST",
    /^\/files\/folder$/,
    async (sandbox, _req, res, _match, url) => {
      await createFolder(sandbox, url.searchParams.get("path") ?? "", url.searchParams.get("mode") || "755");
      res.writeHead(201).end();
    },
  ],
  ["GET", /^\/user-home-dir$/, async () => ({ dir: SANDBOX_USER.home })],
  ["GET", /^\/work-dir$/, async () => ({ dir: SANDBOX_USER.home })],
  ["POST", /^\/computeruse\/start$/, (sandbox) => computer.start(sandbox)],
  ["POST", /^\/computeruse\/stop$/, (sandbox) => computer.stop(sandbox)],
  ["GET", /^\/computeruse\/(process-)?status$/, (sandbox) => computer.status(sandbox)],
  [
    "GET",
    /^\/computeruse\/screenshot$/,
    (sandbox, _req, _res, _match, url) =>
      computer.screenshot(sandbox, url.searchParams.get("showCursor") === "true"),
  ],
  ["GET", /^\/computeruse\/mouse\/position$/, (sandbox) => computer.mousePosition(sandbox)],
  ["POST", /^\/computeruse\/mouse\/move$/, json(computer.mouseMove)],
  ["POST", /^\/computeruse\/mouse\/click$/, json(computer.mouseClick)],
  ["POST", /^\/computeruse\/mouse\/drag$/, json(computer.mouseDrag)],
  ["POST", /^\/computeruse\/mouse\/scroll$/, json(computer.mouseScroll)],
  ["POST", /^\/computeruse\/keyboard\/type$/, json(computer.keyboardType)],
  ["POST", /^\/computeruse\/keyboard\/key$/, json(computer.keyboardPress)],
  ["POST", /^\/computeruse\/keyboard\/hotkey$/, json(computer.keyboardHotkey)],
  ["GET", /^\/computeruse\/display\/info$/, (sandbox) => computer.displayInfo(sandbox)],
  ["GET", /^\/computeruse\/display\/windows$/, (sandbox) => computer.windows(sandbox)],
];

/** The started sandbox a toolbox path names, and the path within its toolbox. */
function startedSandbox(registry: SandboxRegistry, path: string): { sandbox: Sandbox; rest: string } {
  const match = /^\/([^/]+)(\/.*)?$/.exec(path);
  const sandbox = registry.get(decodeURIComponent(match?.[1] ?? ""));
  if (!sandbox) throw notFound("sandbox not found", "DAYTONA_PROXY");
  if (sandbox.state !== "started") throw notStarted();
  registry.touch(sandbox);
  return { sandbox, rest: match?.[2] ?? "/" };
}

export async function serveToolbox(
  registry: SandboxRegistry,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  try {
    const { sandbox, rest } = startedSandbox(registry, path);
    const url = new URL(req.url ?? "/", "http://emulator");
    for (const [method, pattern, route] of ROUTES) {
      const match = pattern.exec(rest);
      if (!match || req.method !== method) continue;
      const answer = await route(sandbox, req, res, match.slice(1).map(decodeURIComponent), url);
      if (answer !== undefined) sendJson(res, 200, answer);
      return;
    }
    throw new DaytonaHttpError(404, `${req.method} ${rest} is not emulated`, "NOT_FOUND", "DAYTONA_DAEMON");
  } catch (error) {
    sendError(res, req, error instanceof BadBody ? badRequest(error.message) : error);
  }
}

/** The one toolbox WebSocket: a session command's logs. */
export function upgradeToolbox(
  registry: SandboxRegistry,
  sockets: WebSocketServer,
  path: string,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
) {
  try {
    const { sandbox, rest } = startedSandbox(registry, path);
    const match = /^\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/.exec(rest);
    if (!match) throw notFound(`no WebSocket at ${rest}`, "DAYTONA_DAEMON");
    const command = sandbox.sessions
      .get(decodeURIComponent(match[1] ?? ""))
      .command(decodeURIComponent(match[2] ?? ""));
    followCommandLogs(sockets, sandbox, command, req, socket, head);
  } catch (error) {
    const answer = error instanceof DaytonaHttpError ? error : new DaytonaHttpError(500, String(error));
    refuseUpgrade(socket, answer.status, errorBody(answer, req));
  }
}
