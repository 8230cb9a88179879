import { WORKSPACE_ROLES, type WorkspaceRole } from "@cubicle/db";

export { WORKSPACE_ROLES, type WorkspaceRole };

const RANK: Record<WorkspaceRole, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** Roles are ordered: each one may do everything the roles below it may. */
export const hasRole = (actual: WorkspaceRole, minimum: WorkspaceRole): boolean =>
  RANK[actual] >= RANK[minimum];

export const isWorkspaceRole = (value: unknown): value is WorkspaceRole =>
  typeof value === "string" && (WORKSPACE_ROLES as readonly string[]).includes(value);

export const lowerOf = (a: WorkspaceRole, b: WorkspaceRole): WorkspaceRole => (RANK[a] <= RANK[b] ? a : b);
