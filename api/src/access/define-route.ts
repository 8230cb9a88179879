import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import { ProblemSchema } from "../http/problem.ts";
import { describeAccess, guard, type RouteAccess } from "./guards.ts";

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: ProblemSchema } },
});

const PROBLEM_RESPONSES = {
  400: problem("The request is not valid."),
  401: problem("No valid session or API key."),
  403: problem("The caller's role does not allow this."),
  404: problem("Not found, or not visible to the caller."),
} as const;

/**
 * The only way /v1 routes are declared: each names who may call it, and gets the guard, the
 * OpenAPI security requirement and the standard problem responses from that one declaration. Each
 * has an operationId, the stable name a generated client (and @cubicle/client) calls it by.
 */
export function defineRoute<
  P extends string,
  R extends Omit<RouteConfig, "path" | "middleware" | "security"> & { path: P; operationId: string },
>(access: RouteAccess, config: R) {
  const people = access.kind === "deployment-owner" || access.people === true;
  return createRoute({
    ...config,
    description: [config.description, `Access: ${describeAccess(access)}.`].filter(Boolean).join("\n\n"),
    security: people ? [{ session: [] }] : [{ session: [] }, { apiKey: [] }],
    middleware: guard(access),
    responses: { ...PROBLEM_RESPONSES, ...withProblemBodies(config.responses) },
  }) as R & { getRoutingPath(): string };
}

/** A route's own error statuses (409, 413…) are problem JSON too, so the document says so. */
function withProblemBodies<T extends RouteConfig["responses"]>(responses: T): T {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) =>
      Number(status) >= 400 && "description" in response && !("content" in response && response.content)
        ? [status, problem(response.description ?? "Problem")]
        : [status, response],
    ),
  ) as T;
}
