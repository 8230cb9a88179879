import { ACTOR_TYPES, type AuditEvent } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import type { AppEnv } from "../context.ts";
import { iso } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { InvalidCursorError } from "./audit-log.ts";

const AuditEventSchema = z
  .object({
    id: z.number().int(),
    occurredAt: z.string().datetime(),
    workspaceId: z.string().nullable(),
    actor: z.object({ type: z.enum(ACTOR_TYPES), id: z.string().nullable(), label: z.string().nullable() }),
    action: z.string(),
    target: z.object({ type: z.string(), id: z.string() }).nullable(),
    ip: z.string().nullable(),
    requestId: z.string().nullable(),
    data: z.record(z.string(), z.unknown()),
  })
  .openapi("AuditEvent");

const AuditPageSchema = z
  .object({ items: z.array(AuditEventSchema), nextCursor: z.string().nullable() })
  .openapi("AuditPage");

const AuditFilters = z.object({
  actorId: z.string().max(128).optional(),
  actorType: z.enum(ACTOR_TYPES).optional(),
  action: z
    .string()
    .max(128)
    .optional()
    .openapi({ description: "Exact action, or a prefix such as `member.*`." }),
  targetType: z.string().max(64).optional(),
  targetId: z.string().max(128).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
  cursor: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

const workspaceAudit = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "listWorkspaceAuditEvents",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/audit-events",
    summary: "The workspace's audit trail, newest first",
    tags: ["Audit"],
    request: { params: WorkspaceIdParam, query: AuditFilters },
    responses: { 200: { description: "OK", content: { "application/json": { schema: AuditPageSchema } } } },
  },
);

const deploymentAudit = defineRoute(
  { kind: "deployment-owner" },
  {
    operationId: "listDeploymentAuditEvents",
    method: "get",
    path: "/v1/deployment/audit-events",
    summary: "Every audit event of the deployment (sign-ins included), newest first",
    tags: ["Audit"],
    request: { query: AuditFilters.extend({ workspaceId: z.string().max(64).optional() }) },
    responses: { 200: { description: "OK", content: { "application/json": { schema: AuditPageSchema } } } },
  },
);

export function auditRoutes() {
  return createRouter()
    .openapi(workspaceAudit, async (c) => {
      const page = await queryAudit(c, { ...c.req.valid("query"), workspaceId: c.var.workspace.workspaceId });
      return c.json(page, 200);
    })
    .openapi(deploymentAudit, async (c) => c.json(await queryAudit(c, c.req.valid("query")), 200));
}

async function queryAudit(
  c: Context<AppEnv>,
  filters: z.infer<typeof AuditFilters> & { workspaceId?: string | undefined },
): Promise<z.infer<typeof AuditPageSchema>> {
  try {
    const { since, until, ...rest } = filters;
    const page = await c.var.deps.audit.query({
      ...rest,
      ...(since ? { since: new Date(since) } : {}),
      ...(until ? { until: new Date(until) } : {}),
    });
    return { items: page.items.map(toAuditEvent), nextCursor: page.nextCursor };
  } catch (error) {
    if (error instanceof InvalidCursorError) throw new HttpProblem(400, "INVALID_CURSOR", error.message);
    throw error;
  }
}

function toAuditEvent(row: AuditEvent): z.infer<typeof AuditEventSchema> {
  return {
    id: row.id,
    occurredAt: iso(row.occurred_at),
    workspaceId: row.workspace_id,
    actor: { type: row.actor_type, id: row.actor_id, label: row.actor_label },
    action: row.action,
    target: row.target_type && row.target_id ? { type: row.target_type, id: row.target_id } : null,
    ip: row.ip,
    requestId: row.request_id,
    data: row.data,
  };
}
