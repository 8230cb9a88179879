import { createAccessControl } from "better-auth/plugins/access";
import { adminAc, defaultStatements, memberAc, ownerAc } from "better-auth/plugins/organization/access";

/**
 * Better Auth's own permission table for the organization and api-key plugins. Cubicle checks
 * its roles first (access/guards.ts); this table keeps Better Auth's checks consistent with ours.
 */
const statements = { ...defaultStatements, apiKey: ["create", "read", "update", "delete"] } as const;
const apiKeyAll = ["create", "read", "update", "delete"] as const;

export const accessControl = createAccessControl(statements);

export const workspaceRoles = {
  owner: accessControl.newRole({ ...ownerAc.statements, apiKey: [...apiKeyAll] }),
  admin: accessControl.newRole({ ...adminAc.statements, apiKey: [...apiKeyAll] }),
  member: accessControl.newRole({ ...memberAc.statements, apiKey: [...apiKeyAll] }),
  viewer: accessControl.newRole({}),
};
