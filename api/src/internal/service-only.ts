import { type ServiceName, verifyServiceToken } from "@cubicle/proxy/capability";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context.ts";
import { noSuchRoute } from "../http/problem.ts";

/**
 * Internal routes answer only Cubicle's own processes, each proving itself with its own service
 * token; anyone else gets the answer of an unknown path.
 */
export function serviceOnly(service: ServiceName): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const token = c.req.header("authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
    try {
      await verifyServiceToken(c.var.deps.capabilities, service, token);
    } catch {
      throw noSuchRoute();
    }
    await next();
  };
}
