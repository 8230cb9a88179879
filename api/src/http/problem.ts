import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** RFC 9457 problem details, with a stable machine-readable `code`. */
export const ProblemSchema = z
  .object({
    type: z.string().openapi({ example: "https://cubicle.dev/problems/workspace-not-found" }),
    title: z.string(),
    status: z.number().int(),
    code: z.string().openapi({ example: "WORKSPACE_NOT_FOUND" }),
    detail: z.string().optional(),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    holder: z
      .object({
        type: z.enum(["user", "api_key"]),
        id: z.string(),
        name: z.string().nullable(),
        sessionId: z.string(),
        expiresAt: z.string().datetime(),
      })
      .optional()
      .openapi({
        description:
          "`COMPUTER_BUSY` on opening a session: the open session that holds the bot, and who holds it.",
      }),
  })
  .openapi("Problem");
export type Problem = z.infer<typeof ProblemSchema>;

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
  507: "Insufficient Storage",
};

/**
 * Thrown anywhere in a request; the app's error handler turns it into problem JSON.
 * Throwing (rather than returning) keeps handlers' typed responses to their success shapes.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    readonly detail?: string,
    readonly errors?: Problem["errors"],
  ) {
    super(detail ?? code);
    this.name = "HttpProblem";
  }

  /** Sent as Retry-After: the problem is expected to pass (503, 429). */
  retryAfterSeconds: number | undefined;
  /** Sent as `holder`, so a client names who holds a bot without parsing `detail`. */
  holder: Problem["holder"];
}

/** What a problem says whether or not a request got as far as the app (see client-errors.ts). */
export function problemFields(problem: HttpProblem): Problem {
  return {
    type: `https://cubicle.dev/problems/${problem.code.toLowerCase().replaceAll("_", "-")}`,
    title: TITLES[problem.status] ?? "Error",
    status: problem.status,
    code: problem.code,
    ...(problem.detail ? { detail: problem.detail } : {}),
  };
}

export function problemBody(c: Context, problem: HttpProblem): Problem {
  const requestId: unknown = c.get("requestId");
  return {
    ...problemFields(problem),
    instance: new URL(c.req.url).pathname,
    ...(typeof requestId === "string" ? { requestId } : {}),
    ...(problem.errors ? { errors: problem.errors } : {}),
    ...(problem.holder ? { holder: problem.holder } : {}),
  };
}

/** Built through the context so headers set by earlier middleware (request id) are kept. */
export function problemResponse(c: Context, problem: HttpProblem): Response {
  return c.body(JSON.stringify(problemBody(c, problem)), problem.status, {
    "content-type": "application/problem+json",
    ...(problem.retryAfterSeconds === undefined ? {} : { "retry-after": String(problem.retryAfterSeconds) }),
  });
}

/** The answer for an unknown path, also given to callers who must not learn that a path exists. */
export const noSuchRoute = () => new HttpProblem(404, "NOT_FOUND", "No such route.");

export const notFound = (what: string, code = `${what.toUpperCase().replaceAll(" ", "_")}_NOT_FOUND`) =>
  new HttpProblem(404, code, `No ${what} with that id is visible to you.`);
