import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { problemResponse } from "./http/problem-response.ts";
import { SupervisorProblem } from "./problems.ts";

// Hashing first gives timingSafeEqual the equal-length inputs it needs, without leaking the length.
const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/** Whether an Authorization header carries exactly `Bearer <token>`, compared in constant time. */
export function bearerMatches(expected: Buffer, header: string | undefined): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? "");
  const presented = digest(match?.[1] ?? "");
  return timingSafeEqual(presented, expected) && match !== null;
}

/** Every route except the ones in `open` needs the shared bearer token (the api holds it). */
export function requireBearer(token: string, open: ReadonlySet<string>): MiddlewareHandler {
  const expected = digest(token);
  return async (c, next) => {
    if (c.req.method === "GET" && open.has(c.req.path)) return next();
    if (!bearerMatches(expected, c.req.header("authorization"))) {
      const problem = new SupervisorProblem("UNAUTHORIZED", "a valid supervisor bearer token is required");
      const response = problemResponse(c, problem);
      response.headers.set("www-authenticate", 'Bearer realm="cubicle-supervisor"');
      return response;
    }
    return next();
  };
}
