import { type Computer, type Database, EGRESS_LEVEL_VALUES, type StoredEgressLevel } from "@cubicle/db";
import {
  DEFAULT_EGRESS,
  EGRESS_LEVELS,
  type EgressLevel,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
  MAX_EGRESS_PORTS,
} from "@cubicle/providers/contract";
import { egressHostProblem } from "@cubicle/providers/kernel";
import { z } from "@hono/zod-openapi";
import type { Kysely } from "kysely";

// The database stores the contract's levels and destinations: each list must hold the other's.
EGRESS_LEVEL_VALUES satisfies readonly EgressLevel[];
EGRESS_LEVELS satisfies readonly StoredEgressLevel[];

const DestinationSchema = z
  .object({
    host: z
      .string()
      .trim()
      .toLowerCase()
      .superRefine((host, ctx) => {
        const problem = egressHostProblem(host);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      })
      .openapi({ example: "api.example.com" }),
    ports: z
      .array(z.number().int().min(1).max(65_535))
      .max(MAX_EGRESS_PORTS)
      .refine((ports) => new Set(ports).size === ports.length, "each port once")
      .default([])
      .openapi({ description: "TCP and UDP ports; empty (the default) allows every port." }),
  })
  .openapi("EgressDestination");

const LevelSchema = z.enum(EGRESS_LEVELS).openapi({
  description:
    "`open`: everything but the host Cubicle runs on. `default`: the public internet only (no private, " +
    "link-local or multicast ranges, no other computers). `allowlist`: only `allow`. `offline`: nothing.",
});

/** A policy as an admin sends it: the destinations only with `allowlist`, which needs at least one. */
export const EgressPolicyInput = z
  .object({
    level: LevelSchema,
    allow: z
      .array(DestinationSchema)
      .max(MAX_EGRESS_DESTINATIONS)
      .default([])
      .openapi({ description: `With \`allowlist\` only: 1 to ${MAX_EGRESS_DESTINATIONS} destinations.` }),
  })
  .superRefine((policy, ctx) => {
    if (policy.level === "allowlist" && policy.allow.length === 0)
      ctx.addIssue({
        code: "custom",
        path: ["allow"],
        message: "an allowlist needs at least one destination",
      });
    if (policy.level !== "allowlist" && policy.allow.length > 0)
      ctx.addIssue({
        code: "custom",
        path: ["allow"],
        message: `destinations belong to the allowlist level only, not ${policy.level}`,
      });
  })
  .openapi("EgressPolicyInput");

export const EgressPolicySchema = z
  .object({ level: LevelSchema, allow: z.array(DestinationSchema) })
  .openapi("EgressPolicy");

/** The workspace's policy, which its computers inherit: `default` until an admin sets one. */
export async function workspacePolicy(db: Kysely<Database>, workspaceId: string): Promise<EgressPolicy> {
  const row = await db
    .selectFrom("workspace_egress_policies")
    .select(["level", "allow"])
    .where("workspace_id", "=", workspaceId)
    .executeTakeFirst();
  return row ? { level: row.level, allow: row.allow } : DEFAULT_EGRESS;
}

export interface EffectivePolicy {
  policy: EgressPolicy;
  /** The workspace's, for want of the computer's own. */
  inherited: boolean;
}

/** The computer's own policy, or its workspace's. */
export function effectivePolicy(computer: Computer, workspace: EgressPolicy): EffectivePolicy {
  if (computer.egress_level === null) return { policy: workspace, inherited: true };
  return { policy: { level: computer.egress_level, allow: computer.egress_allow ?? [] }, inherited: false };
}

/** The computer's effective policy, its workspace's read as needed. */
export async function policyOfComputer(db: Kysely<Database>, computer: Computer): Promise<EffectivePolicy> {
  return effectivePolicy(computer, await workspacePolicy(db, computer.workspace_id));
}

/** The effective policy as the api shows and audits it: the policy, and whether it is inherited. */
export const describedPolicy = ({ policy, inherited }: EffectivePolicy) => ({ ...policy, inherited });
