import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../context.ts";
import { HttpProblem } from "../http/problem.ts";
import { memberRole } from "./member-role.ts";
import { hasRole, type WorkspaceRole } from "./roles.ts";

/**
 * Who may call a route. Every /v1 route declares one (see define-route.ts), so access rules sit
 * in one place and read the same everywhere.
 * - `people`: only a signed-in person, never an API key (managing people and keys is not
 *   something an automation's key should be able to do).
 */
export type RouteAccess =
  | { kind: "signed-in"; people?: boolean }
  | { kind: "workspace"; minRole: WorkspaceRole; people?: boolean }
  | { kind: "deployment-owner" };

export function describeAccess(access: RouteAccess): string {
  const who = access.kind === "workspace" ? `workspace ${access.minRole} or higher` : access.kind;
  return access.kind !== "deployment-owner" && access.people ? `${who}, signed in as a person` : who;
}

export function guard(access: RouteAccess): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = c.var.principal;
    if (principal.kind === "anonymous") {
      throw new HttpProblem(401, "UNAUTHENTICATED", "Sign in, or send an API key in the X-Api-Key header.");
    }
    if (access.kind === "deployment-owner") {
      const settings = await c.var.deps.database.db
        .selectFrom("deployment_settings")
        .select("owner_user_id")
        .executeTakeFirstOrThrow();
      // Others are not told that deployment settings exist.
      if (principal.kind !== "user" || settings.owner_user_id !== principal.userId) {
        throw new HttpProblem(404, "NOT_FOUND", "No such resource.");
      }
      return next();
    }

    let role: WorkspaceRole | null = null;
    if (access.kind === "workspace") {
      const workspaceId = c.req.param("workspaceId");
      if (!workspaceId) throw new Error("a workspace route must have a {workspaceId} path parameter");
      role = await roleIn(c, workspaceId);
      if (!role)
        throw new HttpProblem(404, "WORKSPACE_NOT_FOUND", "No workspace with that id is visible to you.");
      c.set("workspace", { workspaceId, role });
    }
    // Before the role check: no key may call a people route, whatever its role, so say so.
    if (access.people && principal.kind !== "user") throw personRequired();
    if (access.kind === "workspace" && role && !hasRole(role, access.minRole))
      throw roleForbidden(access.minRole, role);
    return next();
  };
}

/** Also thrown by handlers whose rule depends on the request (e.g. the mode asked for). */
export const personRequired = () =>
  new HttpProblem(403, "PERSON_REQUIRED", "API keys cannot do this; a signed-in person must.");

export const roleForbidden = (minimum: WorkspaceRole, actual: WorkspaceRole) =>
  new HttpProblem(403, "ROLE_FORBIDDEN", `This needs the ${minimum} role or higher; you are ${actual}.`);

async function roleIn(
  c: Parameters<MiddlewareHandler<AppEnv>>[0],
  workspaceId: string,
): Promise<WorkspaceRole | null> {
  const principal = c.var.principal;
  if (principal.kind === "api_key") return principal.workspaceId === workspaceId ? principal.role : null;
  if (principal.kind !== "user") return null;
  return memberRole(c.var.deps.database.db, workspaceId, principal.userId);
}
