import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "../http/body.ts";

/** Which Daytona service answers: the SDK picks error classes by `source` and `code`. */
export type Source = "DAYTONA_API" | "DAYTONA_DAEMON" | "DAYTONA_PROXY";

/** An error answer as Daytona's services send it: `{statusCode, message, code, source, …}`. */
export class DaytonaHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly source: Source = "DAYTONA_API",
  ) {
    super(message);
    this.name = "DaytonaHttpError";
  }
}

export const notFound = (message: string, source: Source = "DAYTONA_API") =>
  new DaytonaHttpError(404, message, "NOT_FOUND", source);

export const badRequest = (message: string, source: Source = "DAYTONA_DAEMON") =>
  new DaytonaHttpError(400, message, "BAD_REQUEST", source);

/** What Daytona's proxy answers for a sandbox that is not running. */
export const notStarted = () =>
  new DaytonaHttpError(
    400,
    "bad request: failed to resolve container IP after 3 attempts: no IP address found. Is the Sandbox started?",
    "SANDBOX_NOT_RUNNING",
    "DAYTONA_PROXY",
  );

export function errorBody(error: DaytonaHttpError, req: IncomingMessage): Record<string, unknown> {
  return {
    statusCode: error.status,
    message: error.message,
    ...(error.code ? { code: error.code } : {}),
    source: error.source,
    timestamp: new Date().toISOString(),
    path: new URL(req.url ?? "/", "http://emulator").pathname,
    method: req.method,
  };
}

/** Answers `error`, or a 500 for anything that is not a Daytona error; a started answer is cut. */
export function sendError(res: ServerResponse, req: IncomingMessage, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const answer =
    error instanceof DaytonaHttpError
      ? error
      : new DaytonaHttpError(
          500,
          error instanceof Error ? error.message : String(error),
          "INTERNAL_SERVER_ERROR",
        );
  sendJson(res, answer.status, errorBody(answer, req));
}

/** The request's `Authorization: Bearer <key>` is the emulator's key. */
export function authorized(req: IncomingMessage, apiKey: string): boolean {
  return req.headers.authorization === `Bearer ${apiKey}`;
}

export const unauthorized = () => new DaytonaHttpError(401, "Unauthorized", "UNAUTHORIZED");
