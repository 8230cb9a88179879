import { type DatabaseHandle, isDatabaseUnavailable } from "@cubicle/db";
import { APIError } from "better-auth/api";
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { keyRole } from "../api-keys/key-role.ts";
import { verifyKey } from "../api-keys/verify.ts";
import type { AuditLog } from "../audit/audit-log.ts";
import type { AppEnv } from "../context.ts";
import { HttpProblem } from "../http/problem.ts";
import { currentRequest } from "../http/request-context.ts";
import { actorOf, type Principal } from "./principal.ts";

export const API_KEY_HEADER = "x-api-key";
const UNSAFE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Resolves the caller from an API key (`X-Api-Key` or `Authorization: Bearer`) or a session
 * cookie, and audits every request an API key makes, by route pattern.
 */
export function authenticate(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const { auth, audit, env } = c.var.deps;
    const bearer = c.req.header("authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
    const presentedKey = c.req.header(API_KEY_HEADER) ?? bearer;

    if (presentedKey !== undefined) {
      const principal = await principalFromApiKey(c.var.deps, presentedKey);
      c.set("principal", principal);
      await next();
      await audit.record({
        actor: actorOf(principal),
        workspaceId: principal.workspaceId,
        action: "api_key.used",
        target: { type: "api_key", id: principal.keyId },
        // After next(), the route index points at the handler that answered (or the guard that
        // refused); the last *matched* route may be a catch-all registered after it.
        data: { method: c.req.method, route: routePath(c), status: c.res.status },
      });
      return;
    }

    const session = await auth.api.getSession({ headers: c.req.raw.headers }).catch((error: unknown) => {
      // Better Auth answers any failure to read a session with its own 500 and only logs the
      // cause; a database that went away is told as such (503), not as a broken session.
      const cause = currentRequest()?.authFailure;
      throw error instanceof APIError && error.statusCode === 500 && isDatabaseUnavailable(cause)
        ? cause
        : error;
    });
    if (!session) {
      c.set("principal", { kind: "anonymous" });
      return next();
    }
    // Cookies ride along on cross-site requests; a state change must come from a page we trust.
    if (UNSAFE_METHODS.has(c.req.method)) {
      const origin = c.req.header("origin");
      if (!origin || !env.trustedOrigins.includes(origin)) {
        throw new HttpProblem(
          403,
          "UNTRUSTED_ORIGIN",
          "Cookie-authenticated changes must come from a trusted origin.",
        );
      }
    }
    c.set("principal", {
      kind: "user",
      userId: session.user.id,
      email: session.user.email,
      name: session.user.name,
    });
    return next();
  };
}

async function principalFromApiKey(
  deps: { audit: AuditLog; database: DatabaseHandle },
  presented: string,
): Promise<Principal & { kind: "api_key" }> {
  const { audit, database } = deps;
  const reject = async (reason: string): Promise<never> => {
    await audit.record({
      actor: { type: "anonymous", id: null, label: null },
      action: "api_key.rejected",
      data: { reason, keyStart: presented.slice(0, API_KEY_VISIBLE_CHARS) },
    });
    throw new HttpProblem(401, "INVALID_API_KEY", "The API key is unknown, revoked or expired.");
  };
  const verified = await verifyKey(database.db, presented);
  if ("refused" in verified) return reject(verified.refused);
  const { key } = verified;
  const granted = await keyRole(database.db, key.workspaceId, key.metadata);
  if ("refused" in granted) return reject(granted.refused);
  return {
    kind: "api_key",
    keyId: key.id,
    name: key.name ?? key.id,
    workspaceId: key.workspaceId,
    role: granted.role,
    createdBy: granted.createdBy,
  };
}

const API_KEY_VISIBLE_CHARS = 8;
