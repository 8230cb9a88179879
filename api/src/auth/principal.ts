import type { WorkspaceRole } from "../access/roles.ts";
import type { AuditActor } from "../audit/audit-log.ts";

/** Who is calling. Every /v1 request has exactly one. */
export type Principal =
  | { kind: "anonymous" }
  | { kind: "user"; userId: string; email: string; name: string }
  | {
      kind: "api_key";
      keyId: string;
      name: string;
      workspaceId: string;
      /** The key's role, already capped by its creator's current role in the workspace. */
      role: WorkspaceRole;
      createdBy: string;
    };

export function actorOf(principal: Principal): AuditActor {
  switch (principal.kind) {
    case "user":
      return { type: "user", id: principal.userId, label: principal.email };
    case "api_key":
      return { type: "api_key", id: principal.keyId, label: principal.name };
    case "anonymous":
      return { type: "anonymous", id: null, label: null };
  }
}
