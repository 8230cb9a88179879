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
 * OpenAPI security requirement and the standard problem responses from that one declaration.
 */
export function defineRoute<
  P extends string,
  R extends Omit<RouteConfig, "path" | "middleware" | "security"> & { path: P },
>(access: RouteAccess, config: R) {
  const people = access.kind === "deployment-owner" || access.people === true;
  return createRoute({
    ...config,
    description: [config.description, `Access: ${describeAccess(access)}.`].filter(Boolean).join("\n\n"),
    security: people ? [{ session: [] }] : [{ session: [] }, { apiKey: [] }],
    middleware: guard(access),
    responses: { ...PROBLEM_RESPONSES, ...config.responses },
  }) as R & { getRoutingPath(): string };
}
