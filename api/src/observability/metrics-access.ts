import { BearerToken } from "@cubicle/config";
import type { MiddlewareHandler } from "hono";
import { HttpProblem, noSuchRoute, problemResponse } from "../http/problem.ts";

/**
 * /metrics shows the process's internals on the api's public port, so it answers only to
 * `Authorization: Bearer <METRICS_TOKEN>`; without a configured token there is no /metrics at all.
 */
export function metricsAccess(token: string | undefined): MiddlewareHandler {
  const expected = token === undefined ? undefined : new BearerToken(token);
  return async (c, next) => {
    if (!expected) throw noSuchRoute();
    if (!expected.matches(c.req.header("authorization"))) {
      const detail = "Send the deployment's METRICS_TOKEN as `Authorization: Bearer <token>`.";
      const response = problemResponse(c, new HttpProblem(401, "METRICS_TOKEN_REQUIRED", detail));
      response.headers.set("www-authenticate", 'Bearer realm="cubicle-metrics"');
      return response;
    }
    await next();
  };
}
