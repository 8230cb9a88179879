import { BearerToken } from "@cubicle/config";
import type { MiddlewareHandler } from "hono";
import { problemResponse } from "./http/problem-response.ts";
import { SupervisorProblem } from "./problems.ts";

/** Every route except the ones in `open` needs the shared bearer token (the api holds it). */
export function requireBearer(token: string, open: ReadonlySet<string>): MiddlewareHandler {
  const expected = new BearerToken(token);
  return async (c, next) => {
    if (c.req.method === "GET" && open.has(c.req.path)) return next();
    if (!expected.matches(c.req.header("authorization"))) {
      const problem = new SupervisorProblem("UNAUTHORIZED", "a valid supervisor bearer token is required");
      const response = problemResponse(c, problem);
      response.headers.set("www-authenticate", 'Bearer realm="cubicle-supervisor"');
      return response;
    }
    return next();
  };
}
