import type { Database } from "@cubicle/db";
import { DEFAULT_EGRESS, type SandboxProvider } from "@cubicle/providers/contract";
import type { Kysely } from "kysely";
import { unenforcedReason } from "./apply.ts";

/** A stored policy the provider cannot enforce: whose it is, and why. */
export interface UnenforcedPolicy {
  of: string;
  reason: string;
}

/**
 * Every workspace's policy and every computer's own that `provider` cannot enforce: what a switch
 * of provider leaves unenforced, for `cubicle doctor` to say plainly. Computers are held against
 * the provider their next start uses.
 */
export async function unenforcedPolicies(
  db: Kysely<Database>,
  provider: SandboxProvider,
): Promise<UnenforcedPolicy[]> {
  const [workspaces, computers] = await Promise.all([
    db
      .selectFrom("organization")
      .leftJoin("workspace_egress_policies", "workspace_egress_policies.workspace_id", "organization.id")
      .select([
        "organization.id",
        "organization.name",
        "workspace_egress_policies.level",
        "workspace_egress_policies.allow",
      ])
      .orderBy("organization.id")
      .execute(),
    db
      .selectFrom("computers")
      .innerJoin("organization", "organization.id", "computers.workspace_id")
      .select(["computers.id", "organization.name", "computers.egress_level", "computers.egress_allow"])
      .where("computers.egress_level", "is not", null)
      .orderBy("computers.id")
      .execute(),
  ]);
  const found: UnenforcedPolicy[] = [];
  for (const workspace of workspaces) {
    const policy = workspace.level
      ? { level: workspace.level, allow: workspace.allow ?? [] }
      : DEFAULT_EGRESS;
    const reason = unenforcedReason(provider, policy);
    if (reason) found.push({ of: `workspace ${workspace.name} (${workspace.id}), ${policy.level}`, reason });
  }
  for (const computer of computers) {
    if (!computer.egress_level) continue;
    const policy = { level: computer.egress_level, allow: computer.egress_allow ?? [] };
    const reason = unenforcedReason(provider, policy);
    if (reason)
      found.push({ of: `computer ${computer.id} of workspace ${computer.name}, ${policy.level}`, reason });
  }
  return found;
}
