import { MAX_SCREENS } from "@cubicle/providers/contract";
import { COMPUTER_ID_HEADER, WORKSPACE_ID_HEADER } from "@cubicle/providers/supervisor-wire";
import type { Context } from "hono";
import type { z } from "zod";
import type { ComputerRef } from "../containers/manager.ts";
import { assertHomeKey } from "../homes.ts";
import { SupervisorProblem } from "../problems.ts";

/** Computer and workspace ids are the api's record ids; labels hold them, so keep them plain. */
export const IDENTITY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

function invalid(errors: { path: string; message: string }[]): SupervisorProblem {
  const detail = errors.map((error) => `${error.path}: ${error.message}`).join("; ");
  return new SupervisorProblem("INVALID_REQUEST", detail, { errors });
}

/** The computer a per-computer route is about: the path's home key plus the identity headers. */
export function computerRef(c: Context): ComputerRef {
  const homeKey = assertHomeKey(c.req.param("homeKey") ?? "");
  const computerId = c.req.header(COMPUTER_ID_HEADER) ?? "";
  const workspaceId = c.req.header(WORKSPACE_ID_HEADER) ?? "";
  const errors = [
    ...(IDENTITY_PATTERN.test(computerId)
      ? []
      : [{ path: COMPUTER_ID_HEADER, message: "required: the computer's id" }]),
    ...(IDENTITY_PATTERN.test(workspaceId)
      ? []
      : [{ path: WORKSPACE_ID_HEADER, message: "required: the computer's workspace id" }]),
  ];
  if (errors.length > 0) throw invalid(errors);
  return { homeKey, computerId, workspaceId };
}

export function screenIndex(c: Context): number {
  const raw = c.req.param("index") ?? "";
  if (!/^\d{1,6}$/.test(raw)) throw invalid([{ path: "index", message: "a screen number from 0" }]);
  const index = Number(raw);
  if (index >= MAX_SCREENS) {
    throw new SupervisorProblem(
      "SCREEN_OUT_OF_RANGE",
      `a Docker computer has ${MAX_SCREENS} screens (0-${MAX_SCREENS - 1}); screen ${index} is not available`,
    );
  }
  return index;
}

/** The JSON body, validated; INVALID_REQUEST lists every problem. */
export async function jsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw invalid([{ path: "body", message: "must be a JSON document" }]);
  }
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw invalid(
    parsed.error.issues.map((issue) => ({ path: issue.path.join(".") || "body", message: issue.message })),
  );
}

/** A whole-number query parameter within bounds, or the fallback when absent. */
export function integerQuery(c: Context, name: string, fallback: number, max: number): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return fallback;
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value > max) {
    throw invalid([{ path: name, message: `a whole number from 0 to ${max}` }]);
  }
  return value;
}

export function booleanQuery(c: Context, name: string): boolean {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "" || raw === "false" || raw === "0") return false;
  if (raw === "true" || raw === "1") return true;
  throw invalid([{ path: name, message: "true or false" }]);
}

/** The request body as a stream; LENGTH_REQUIRED unless its length is announced up front. */
export function sizedBody(c: Context, max: number): { size: number; body: ReadableStream<Uint8Array> } {
  const length = c.req.header("content-length");
  if (length === undefined || !/^\d{1,16}$/.test(length)) {
    throw new SupervisorProblem("LENGTH_REQUIRED", "send the body with a Content-Length header");
  }
  const size = Number(length);
  if (size > max) throw new SupervisorProblem("FILE_TOO_LARGE", `an upload may be at most ${max} bytes`);
  return { size, body: c.req.raw.body ?? new Blob([]).stream() };
}
