import type { components, paths } from "@cubicle/client/schema";
import createClient from "openapi-fetch";

/** A response or request body of the api, by its OpenAPI schema name. */
export type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

/**
 * The api, typed from its OpenAPI document, called on the dashboard's own origin (the dashboard
 * forwards /v1, /api and /health to it), so the session cookie and the Origin check just work.
 */
export const api = createClient<paths>({ baseUrl: "", credentials: "same-origin" });

type ProblemBody = Schema<"Problem">;
/** Which fields of a request were invalid, and why (a 400 VALIDATION_FAILED names them). */
export type FieldError = NonNullable<ProblemBody["errors"]>[number];

/** An RFC 9457 problem the api answered with, as an Error the UI can show. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
  ) {
    super(detail);
    this.name = "Problem";
  }
}

export async function problemOf(response: Response, body?: unknown): Promise<Problem> {
  let json = body;
  if (json === undefined) {
    try {
      json = await response.clone().json();
    } catch {
      json = undefined;
    }
  }
  const fields = (json ?? {}) as { code?: unknown; detail?: unknown; title?: unknown; errors?: unknown };
  const detail =
    typeof fields.detail === "string" && fields.detail
      ? fields.detail
      : typeof fields.title === "string" && fields.title
        ? fields.title
        : `The server answered ${response.status} ${response.statusText}.`;
  const errors = Array.isArray(fields.errors) ? (fields.errors as FieldError[]) : [];
  return new Problem(
    response.status,
    typeof fields.code === "string" ? fields.code : `HTTP_${response.status}`,
    detail,
    errors,
  );
}

/** The data of a successful call; a Problem for any other answer. */
export async function unwrap<Data>(
  call: Promise<{ data?: Data; error?: unknown; response: Response }>,
): Promise<Data> {
  const { data, error, response } = await call;
  if (!response.ok) throw await problemOf(response, error);
  return data as Data;
}
