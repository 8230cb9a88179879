import type { Database } from "@cubicle/db";
import type { ScreenMode } from "@cubicle/proxy/capability";
import { type Kysely, sql } from "kysely";
import { roleForbidden } from "../access/guards.ts";
import { memberRole } from "../access/member-role.ts";
import { hasRole, type WorkspaceRole } from "../access/roles.ts";
import { keyRole, parseKeyMetadata } from "../api-keys/key-role.ts";
import type { HttpProblem } from "../http/problem.ts";

/**
 * Named by the triggers of migration 0005: every change that may take access away (a member
 * removed or given another role, a key revoked or deleted, and what cascades to them) notifies
 * this channel with `{workspaceId}` when it commits.
 */
export const ACCESS_CHANGES_CHANNEL = "cubicle_access_changes";

type Caller = { kind: "user"; userId: string } | { kind: "api_key"; keyId: string };

/** Whom a capability is issued to, as its `sub` claim names them. */
export const subjectOf = (caller: Caller): string =>
  caller.kind === "user" ? `user:${caller.userId}` : `api_key:${caller.keyId}`;

/** Who holds a control lease: a person, or an API key (an embedding app's backend). */
export interface ControlHolder {
  type: "user" | "api_key";
  id: string;
}

/** A lease holder as a capability subject: holder types are named as subjects are. */
export const subjectOfHolder = (holder: ControlHolder): string => `${holder.type}:${holder.id}`;

/** The lease holder a caller is, when it takes, renews or releases control. */
export const holderOfCaller = (caller: Caller): ControlHolder =>
  caller.kind === "user" ? { type: "user", id: caller.userId } : { type: "api_key", id: caller.keyId };

/**
 * Why this caller may not control a screen, or undefined when it may: a person or an API key (an
 * embedding app's backend, taking control for its page) of role member or above; any role may
 * view. Minting asks it, and so does every later check of an open socket.
 */
export function controlRefusal(role: WorkspaceRole): HttpProblem | undefined {
  return hasRole(role, "member") ? undefined : roleForbidden("member", role);
}

export interface ScreenAccess {
  modes: ScreenMode[];
  /** When the access ends by itself with no change to announce (a key's expiry), if it does. */
  endsAt: Date | null;
}

/**
 * The modes a capability's subject may still hold a socket in, in this workspace, as of now:
 * none once the person left (or their account went) or the key was revoked, deleted or expired,
 * or its creator left. Proxies ask this of every socket they admit and again whenever access in
 * its workspace changes (or ends by itself).
 */
export async function screenAccessOf(
  db: Kysely<Database>,
  subject: string,
  workspaceId: string,
): Promise<ScreenAccess> {
  const [kind, id = ""] = subject.split(/:(.*)/s);
  let role: WorkspaceRole | undefined;
  let endsAt: Date | null = null;
  if (kind === "user") {
    role = (await memberRole(db, workspaceId, id)) ?? undefined;
  } else if (kind === "api_key") {
    const key = await db
      .selectFrom("apikey")
      .select(["metadata", "expiresAt"])
      .where("id", "=", id)
      .where("referenceId", "=", workspaceId)
      .where((eb) => eb.or([eb("enabled", "is", null), eb("enabled", "=", true)]))
      .where((eb) => eb.or([eb("expiresAt", "is", null), eb("expiresAt", ">", sql<Date>`now()`)]))
      .executeTakeFirst();
    const granted = key ? await keyRole(db, workspaceId, parseKeyMetadata(key.metadata)) : undefined;
    role = granted && "role" in granted ? granted.role : undefined;
    endsAt = key?.expiresAt ?? null;
  }
  if (!role) return { modes: [], endsAt: null };
  const modes: ScreenMode[] = controlRefusal(role) ? ["view"] : ["view", "control"];
  return { modes, endsAt };
}
