import { type createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../context.ts";
import { HttpProblem, noSuchRoute, ProblemSchema, problemResponse } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { AUTH_BASE_PATH } from "./auth.ts";

/**
 * The Better Auth endpoints anyone may call: accounts and their sessions. Its organization and
 * API-key endpoints stay internal (Cubicle's routes call them through `auth.api` after checking
 * roles and with an audit record); served here they would change workspaces, members, roles and
 * keys around both.
 */
const PUBLIC_AUTH_ENDPOINTS: ReadonlySet<string> = new Set([
  "POST /sign-up/email",
  "POST /sign-in/email",
  "POST /sign-out",
  "GET /get-session",
]);

/**
 * Better Auth's account endpoints (sign-up, sign-in, sign-out, session) served as they are, with
 * their errors rewritten as problem JSON so clients see one error shape across the API; any other
 * path under it is no route.
 */
export function authHandlerRoutes() {
  const router = createRouter();
  router.on(["GET", "POST"], `${AUTH_BASE_PATH}/*`, async (c) => {
    const endpoint = `${c.req.method} ${c.req.path.slice(AUTH_BASE_PATH.length)}`;
    if (!PUBLIC_AUTH_ENDPOINTS.has(endpoint)) throw noSuchRoute();
    const response = await c.var.deps.auth.handler(withJsonBody(c.req.raw));
    return response.status >= 400 ? asProblem(c, response) : response;
  });
  documentAuthEndpoints(router);
  return router;
}

/**
 * Better Auth refuses a POST without a JSON body (415), even where it reads none (sign-out): a
 * bodiless POST, as the sign-out route is documented, is given an empty JSON object.
 */
function withJsonBody(request: Request): Request {
  const bodiless =
    request.method === "POST" &&
    !request.headers.has("content-type") &&
    !request.headers.has("transfer-encoding") &&
    (request.headers.get("content-length") ?? "0") === "0";
  if (!bodiless) return request;
  const headers = new Headers(request.headers);
  headers.set("content-type", "application/json");
  headers.delete("content-length");
  return new Request(request.url, { method: "POST", headers, body: "{}", signal: request.signal });
}

async function asProblem(c: Context<AppEnv>, response: Response): Promise<Response> {
  const text = await response.text();
  let body: { code?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: keep the status, describe it generically.
  }
  const code = typeof body.code === "string" && body.code ? body.code : `AUTH_${response.status}`;
  const detail = typeof body.message === "string" ? body.message : undefined;
  const status = response.status as ConstructorParameters<typeof HttpProblem>[0];
  const problem = problemResponse(c, new HttpProblem(status, code, detail));
  // Better Auth's rate limit says when to try again in a header of its own; HTTP's is Retry-After.
  const retryAfter = response.headers.get("x-retry-after");
  if (retryAfter) problem.headers.set("retry-after", retryAfter);
  return problem;
}

const Credentials = z.object({ email: z.string().email(), password: z.string().min(10).max(256) });
const UserSchema = z.object({ id: z.string(), email: z.string(), name: z.string() }).openapi("User");
const authProblem = { content: { "application/problem+json": { schema: ProblemSchema } } };

function documentAuthEndpoints(router: ReturnType<typeof createRouter>) {
  const doc = (config: Parameters<typeof createRoute>[0] & { operationId: string }) =>
    router.openAPIRegistry.registerPath(config);
  doc({
    operationId: "signUpWithEmail",
    method: "post",
    path: `${AUTH_BASE_PATH}/sign-up/email`,
    summary: "Create an account (the first one owns the deployment); sets the session cookie",
    tags: ["Accounts"],
    request: {
      body: {
        content: { "application/json": { schema: Credentials.extend({ name: z.string().min(1).max(100) }) } },
      },
    },
    responses: {
      200: {
        description: "Signed up and signed in",
        content: { "application/json": { schema: z.object({ user: UserSchema }) } },
      },
      403: { description: "Sign-ups are closed (SIGNUPS_CLOSED)", ...authProblem },
      422: { description: "The email is taken", ...authProblem },
    },
  });
  doc({
    operationId: "signInWithEmail",
    method: "post",
    path: `${AUTH_BASE_PATH}/sign-in/email`,
    summary: "Sign in; sets the session cookie",
    tags: ["Accounts"],
    request: { body: { content: { "application/json": { schema: Credentials } } } },
    responses: {
      200: {
        description: "Signed in",
        content: { "application/json": { schema: z.object({ user: UserSchema }) } },
      },
      401: { description: "Wrong email or password (INVALID_EMAIL_OR_PASSWORD)", ...authProblem },
    },
  });
  doc({
    operationId: "signOut",
    method: "post",
    path: `${AUTH_BASE_PATH}/sign-out`,
    summary: "Sign out; clears the session cookie",
    description: "No body is needed (an empty JSON object is accepted too).",
    tags: ["Accounts"],
    responses: { 200: { description: "Signed out" } },
  });
}
