import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import { memberRole } from "../access/member-role.ts";
import { isWorkspaceRole, lowerOf, type WorkspaceRole } from "../access/roles.ts";

export type KeyRole =
  | { role: WorkspaceRole; createdBy: string }
  | { refused: "KEY_METADATA_INVALID" | "KEY_CREATOR_LEFT_WORKSPACE" };

/**
 * What a key of this workspace may do now: a key never outranks the person who made it, and
 * stops working when they leave. Requests with the key and the screen sockets it opened are both
 * judged by this.
 */
export async function keyRole(
  db: Kysely<Database>,
  workspaceId: string,
  metadata: unknown,
): Promise<KeyRole> {
  const { role, createdBy } = (typeof metadata === "object" && metadata !== null ? metadata : {}) as {
    role?: unknown;
    createdBy?: unknown;
  };
  if (!isWorkspaceRole(role) || typeof createdBy !== "string") return { refused: "KEY_METADATA_INVALID" };
  const creatorRole = await memberRole(db, workspaceId, createdBy);
  if (!creatorRole) return { refused: "KEY_CREATOR_LEFT_WORKSPACE" };
  return { role: lowerOf(role, creatorRole), createdBy };
}

/** Better Auth stores a key's metadata as JSON text. */
export function parseKeyMetadata(text: string | null): { role?: unknown; createdBy?: unknown } {
  try {
    const value: unknown = JSON.parse(text ?? "{}");
    return typeof value === "object" && value !== null ? value : {};
  } catch {
    return {};
  }
}
