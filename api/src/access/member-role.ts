import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import { isWorkspaceRole, type WorkspaceRole } from "./roles.ts";

/** A person's role in a workspace as the database holds it now; null when they are not a member. */
export async function memberRole(
  db: Kysely<Database>,
  workspaceId: string,
  userId: string,
): Promise<WorkspaceRole | null> {
  const member = await db
    .selectFrom("member")
    .select("role")
    .where("organizationId", "=", workspaceId)
    .where("userId", "=", userId)
    .executeTakeFirst();
  return member && isWorkspaceRole(member.role) ? member.role : null;
}
