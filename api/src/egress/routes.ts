import type { Computer, Database } from "@cubicle/db";
import { EGRESS_LEVELS, type EgressPolicy, type SandboxProvider } from "@cubicle/providers/contract";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Kysely } from "kysely";
import { defineRoute } from "../access/define-route.ts";
import type { AuditActor } from "../audit/audit-log.ts";
import { actorOf } from "../auth/principal.ts";
import { COMPUTERS, computerOf } from "../computers/http.ts";
import { type ComputerDeps, withComputerLock } from "../computers/lifecycle.ts";
import type { AppEnv } from "../context.ts";
import { jsonResponse as json } from "../http/openapi.ts";
import { ComputerParams, WorkspaceIdParam } from "../http/params.ts";
import { createRouter } from "../http/router.ts";
import { applyToComputer, providerOfComputer, requireEnforceable, unenforcedReason } from "./apply.ts";
import {
  describedPolicy,
  type EffectivePolicy,
  EgressPolicyInput,
  EgressPolicySchema,
  effectivePolicy,
  workspacePolicy,
} from "./policy.ts";

const LevelList = z.array(z.enum(EGRESS_LEVELS));

const AllowlistLimitsSchema = z
  .object({
    ports: z.boolean().openapi({
      description: "Whether a destination may be narrowed to ports; where not, list it without ports.",
    }),
    maxDestinations: z.number().int(),
  })
  .nullable()
  .openapi("EgressAllowlistLimits", {
    description: "What an allowlist may hold on the provider; null where it enforces no allowlist.",
  });

const WorkspaceEgressSchema = EgressPolicySchema.extend({
  enforceableLevels: LevelList.openapi({
    description: "The levels the provider new machines run on enforces; the others cannot be chosen.",
  }),
  allowlistLimits: AllowlistLimitsSchema,
}).openapi("WorkspaceEgressPolicy");

const ComputerEgressSchema = EgressPolicySchema.extend({
  inherited: z.boolean().openapi({ description: "The workspace's policy, for want of the computer's own." }),
  enforced: z.boolean().openapi({
    description:
      "Whether the computer's provider enforces this level (where not, the machine reaches what its host lets it).",
  }),
  unenforcedReason: z.string().nullable().openapi({
    description: "Why the computer's provider cannot enforce this policy; null when it does.",
  }),
  enforceableLevels: LevelList.openapi({ description: "The levels the computer's provider enforces." }),
  allowlistLimits: AllowlistLimitsSchema,
  refusedTotal: z
    .number()
    .int()
    .openapi({ description: "Connections its policy refused, as far as Cubicle has read." }),
}).openapi("ComputerEgressPolicy");

const PATH = "/v1/workspaces/{workspaceId}/egress-policy";
const COMPUTER_PATH = `${COMPUTERS}/{computerId}/egress-policy`;
const body = { required: true, content: { "application/json": { schema: EgressPolicyInput } } };
const CHANGE_PROBLEMS = {
  422: {
    description: "The provider cannot enforce the level (EGRESS_UNSUPPORTED); the detail names those it can",
  },
  502: { description: "The provider failed to apply it (PROVIDER_FAILURE); the previous policy stays" },
  503: { description: "The provider does not answer (PROVIDER_UNAVAILABLE); the previous policy stays" },
} as const;

const getWorkspaceEgress = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getWorkspaceEgress",
    method: "get",
    path: PATH,
    summary: "The workspace's egress policy, which its computers inherit",
    description: "Where computers' programs may open connections; `default` until an admin sets another.",
    tags: ["Egress"],
    request: { params: WorkspaceIdParam },
    responses: { 200: json("OK", WorkspaceEgressSchema) },
  },
);

const putWorkspaceEgress = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "setWorkspaceEgress",
    method: "put",
    path: PATH,
    summary: "Set the workspace's egress policy",
    description:
      "Applied at once to the workspace's running computers that inherit it, without restarting them; " +
      "the answer comes once each has it. If one fails, those already changed get the previous policy " +
      "back and nothing is kept. A person sets it, never an API key: the policy confines what keys drive.",
    tags: ["Egress"],
    request: { params: WorkspaceIdParam, body },
    responses: { 200: json("Set and applied", WorkspaceEgressSchema), ...CHANGE_PROBLEMS },
  },
);

const getComputerEgress = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getComputerEgress",
    method: "get",
    path: COMPUTER_PATH,
    summary: "A computer's effective egress policy, whether its provider enforces it, and what it refused",
    tags: ["Egress"],
    request: { params: ComputerParams },
    responses: { 200: json("OK", ComputerEgressSchema) },
  },
);

const putComputerEgress = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "setComputerEgress",
    method: "put",
    path: COMPUTER_PATH,
    summary: "Give a computer its own egress policy, overriding its workspace's",
    description:
      "Applied to its machine at once, without a restart; the answer comes once the provider applied " +
      "it. If the provider fails, the previous policy stays.",
    tags: ["Egress"],
    request: { params: ComputerParams, body },
    responses: { 200: json("Set and applied", ComputerEgressSchema), ...CHANGE_PROBLEMS },
  },
);

const deleteComputerEgress = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "clearComputerEgress",
    method: "delete",
    path: COMPUTER_PATH,
    summary: "Return a computer to its workspace's egress policy",
    tags: ["Egress"],
    request: { params: ComputerParams },
    responses: { 200: json("Inheriting, and applied", ComputerEgressSchema), ...CHANGE_PROBLEMS },
  },
);

export function egressRoutes() {
  return createRouter()
    .openapi(getWorkspaceEgress, async (c) => {
      const { db } = c.var.deps.database;
      return c.json(await workspaceView(c, await workspacePolicy(db, c.var.workspace.workspaceId)), 200);
    })
    .openapi(putWorkspaceEgress, async (c) => {
      const policy = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      requireEnforceable(await c.var.deps.sandbox.current(), policy);
      await setWorkspacePolicy(c.var.deps, workspaceId, policy, actorOf(c.var.principal));
      return c.json(await workspaceView(c, policy), 200);
    })
    .openapi(getComputerEgress, async (c) => c.json(await computerView(c, await computerOf(c)), 200))
    .openapi(putComputerEgress, async (c) => {
      const policy = c.req.valid("json");
      const computer = await changeComputerPolicy(c, policy);
      return c.json(await computerView(c, computer), 200);
    })
    .openapi(deleteComputerEgress, async (c) => {
      const computer = await changeComputerPolicy(c, null);
      return c.json(await computerView(c, computer), 200);
    });
}

/** What the provider enforces, as both views show it. */
function enforceable({ capabilities }: SandboxProvider) {
  const limits = capabilities.egressAllowlist;
  return {
    enforceableLevels: [...capabilities.egress],
    allowlistLimits:
      capabilities.egress.includes("allowlist") && limits
        ? { ports: limits.ports, maxDestinations: limits.maxDestinations }
        : null,
  };
}

async function workspaceView(c: Context<AppEnv>, policy: EgressPolicy) {
  return { ...policy, ...enforceable(await c.var.deps.sandbox.current()) };
}

async function computerView(c: Context<AppEnv>, computer: Computer) {
  const { db } = c.var.deps.database;
  const [effective, provider, refusals] = await Promise.all([
    effectivePolicy(computer, await workspacePolicy(db, computer.workspace_id)),
    providerOfComputer(c.var.deps, computer),
    db
      .selectFrom("computer_egress_refusals")
      .select("refused_total")
      .where("computer_id", "=", computer.id)
      .executeTakeFirst(),
  ]);
  const why = unenforcedReason(provider, effective.policy);
  return {
    ...effective.policy,
    inherited: effective.inherited,
    enforced: why === null,
    unenforcedReason: why,
    ...enforceable(provider),
    refusedTotal: refusals?.refused_total ?? 0,
  };
}

/**
 * Sets (`policy`) or clears (null: inherit) the computer's own policy: applied to its machine
 * first, then stored with its audit record, so a provider that fails leaves everything as it was.
 * Under the computer's lock, so a start in this process applies the policy before or after, never
 * between.
 */
async function changeComputerPolicy(c: Context<AppEnv>, policy: EgressPolicy | null): Promise<Computer> {
  const deps = c.var.deps;
  const { db } = deps.database;
  const found = await computerOf(c);
  return withComputerLock(deps, found.id, async () => {
    const computer = await computerOf(c);
    const workspace = await workspacePolicy(db, computer.workspace_id);
    const before = effectivePolicy(computer, workspace);
    const after: EffectivePolicy = policy
      ? { policy, inherited: false }
      : { policy: workspace, inherited: true };
    // an inherited policy was the workspace's choice, made when the provider allowed it
    if (policy) requireEnforceable(await providerOfComputer(deps, computer), policy);
    await applyToComputer(deps, computer, after.policy);
    return db.transaction().execute(async (trx) => {
      const changed = await trx
        .updateTable("computers")
        .set({
          egress_level: policy?.level ?? null,
          egress_allow: policy ? JSON.stringify(policy.allow) : null,
        })
        .where("id", "=", computer.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      await deps.audit.record(
        {
          actor: actorOf(c.var.principal),
          workspaceId: computer.workspace_id,
          action: "computer.egress_changed",
          target: { type: "computer", id: computer.id },
          data: { before: describedPolicy(before), after: describedPolicy(after) },
        },
        trx,
      );
      return changed;
    });
  });
}

/**
 * The workspace's policy, applied to its running computers that inherit it before it is stored
 * (with its audit record). If one of them fails, those already changed are given the previous
 * policy back and the failure is thrown: nothing changed.
 */
async function setWorkspacePolicy(
  deps: ComputerDeps,
  workspaceId: string,
  policy: EgressPolicy,
  actor: AuditActor,
): Promise<void> {
  const { db } = deps.database;
  const before = await workspacePolicy(db, workspaceId);
  const inheriting = () =>
    db
      .selectFrom("computers")
      .selectAll()
      .where("workspace_id", "=", workspaceId)
      .where("egress_level", "is", null)
      .where("state", "=", "running");
  const applied: Computer[] = [];
  try {
    for (const listed of await inheriting().execute()) {
      await withComputerLock(deps, listed.id, async () => {
        const computer = await inheriting().where("id", "=", listed.id).executeTakeFirst();
        if (!computer) return;
        await applyToComputer(deps, computer, policy);
        applied.push(computer);
      });
    }
  } catch (error) {
    for (const computer of applied)
      await withComputerLock(deps, computer.id, () => applyToComputer(deps, computer, before)).catch(
        () => undefined,
      );
    throw error;
  }
  await storeWorkspacePolicy(deps, db, workspaceId, { before, after: policy }, actor);
}

function storeWorkspacePolicy(
  deps: ComputerDeps,
  db: Kysely<Database>,
  workspaceId: string,
  { before, after }: { before: EgressPolicy; after: EgressPolicy },
  actor: AuditActor,
): Promise<void> {
  return db.transaction().execute(async (trx) => {
    const values = { level: after.level, allow: JSON.stringify(after.allow) };
    await trx
      .insertInto("workspace_egress_policies")
      .values({ workspace_id: workspaceId, ...values })
      .onConflict((oc) => oc.column("workspace_id").doUpdateSet({ ...values, updated_at: new Date() }))
      .execute();
    await deps.audit.record(
      {
        actor,
        workspaceId,
        action: "workspace.egress_changed",
        target: { type: "workspace", id: workspaceId },
        data: { before, after },
      },
      trx,
    );
  });
}
