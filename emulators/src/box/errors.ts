import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { BadBody, BodyTooLarge, sendJson } from "../http/body.ts";
import { MachineMissing } from "../machines/index.ts";

/** An error answer as Box sends it; the HTTP status is authoritative, `code` is what clients branch on. */
export class BoxError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = "BoxError";
  }
}

export const boxNotFound = (id: string) => new BoxError(404, "box_not_found", `Box ${id} not found.`);
export const badRequest = (code: string, message: string) => new BoxError(400, code, message);
export const conflict = (code: string, message: string) => new BoxError(409, code, message);

/** `{ok:false, type:"box.error", status, code, message, error:{…}, requestId}` */
export function errorBody(error: BoxError): Record<string, unknown> {
  return {
    ok: false,
    type: "box.error",
    status: error.status,
    code: error.code,
    message: error.message,
    error: {
      code: error.code,
      message: error.message,
      status: error.status,
      ...(error.details ? { details: error.details } : {}),
    },
    requestId: `req_${randomBytes(12).toString("hex")}`,
  };
}

/** Any failure as a Box error: what the emulator cannot place is Box's 500. */
export function boxErrorOf(error: unknown): BoxError {
  if (error instanceof BoxError) return error;
  if (error instanceof BodyTooLarge) return new BoxError(413, "payload_too_large", error.message);
  if (error instanceof BadBody) return badRequest("invalid_json", "Request body must be valid JSON.");
  if (error instanceof MachineMissing) return new BoxError(404, "box_not_found", "Box not found.");
  return new BoxError(500, "internal_error", error instanceof Error ? error.message : String(error));
}

export function sendError(res: ServerResponse, error: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const answer = boxErrorOf(error);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendJson(res, answer.status, errorBody(answer));
}
