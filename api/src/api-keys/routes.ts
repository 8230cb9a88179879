import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { hasRole, isWorkspaceRole, WORKSPACE_ROLES } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { iso, isoOrNull } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";
import { parseKeyMetadata } from "./key-role.ts";

const ApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    start: z.string().nullable().openapi({ description: "The first characters, to recognise the key." }),
    role: z.enum(WORKSPACE_ROLES),
    createdBy: z.string(),
    enabled: z.boolean(),
    createdAt: z.string().datetime(),
    expiresAt: z.string().datetime().nullable(),
    lastUsedAt: z.string().datetime().nullable(),
  })
  .openapi("ApiKey");

const CreatedApiKeySchema = ApiKeySchema.extend({
  key: z.string().openapi({ description: "The secret. Shown in this response only; store it now." }),
}).openapi("CreatedApiKey");

const ApiKeyParams = WorkspaceIdParam.extend({
  keyId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "keyId", in: "path" } }),
});

const createKey = defineRoute(
  { kind: "workspace", minRole: "member", people: true },
  {
    operationId: "createApiKey",
    method: "post",
    path: "/v1/workspaces/{workspaceId}/api-keys",
    summary: "Create an API key for automations",
    description:
      "The key acts in this workspace only, with the given role, never above its creator's current role, " +
      "and stops working if its creator leaves the workspace. Send it in the X-Api-Key header.",
    tags: ["API keys"],
    request: {
      params: WorkspaceIdParam,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z
              .object({
                name: z.string().trim().min(1).max(100),
                role: z.enum(WORKSPACE_ROLES).default("member"),
                expiresInDays: z.number().int().min(1).max(365).optional(),
              })
              .openapi("CreateApiKey"),
          },
        },
      },
    },
    responses: {
      201: { description: "Created", content: { "application/json": { schema: CreatedApiKeySchema } } },
    },
  },
);

const listKeys = defineRoute(
  { kind: "workspace", minRole: "member", people: true },
  {
    operationId: "listApiKeys",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/api-keys",
    summary: "API keys of the workspace (members see their own; admins see all)",
    tags: ["API keys"],
    request: { params: WorkspaceIdParam },
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(ApiKeySchema) }) } },
      },
    },
  },
);

const revokeKey = defineRoute(
  { kind: "workspace", minRole: "member", people: true },
  {
    operationId: "revokeApiKey",
    method: "delete",
    path: "/v1/workspaces/{workspaceId}/api-keys/{keyId}",
    summary: "Revoke an API key (members their own; admins any)",
    tags: ["API keys"],
    request: { params: ApiKeyParams },
    responses: { 204: { description: "Revoked" } },
  },
);

export function apiKeyRoutes() {
  return createRouter()
    .openapi(createKey, async (c) => {
      const body = c.req.valid("json");
      const { workspaceId, role: callerRole } = c.var.workspace;
      const userId = personId(c);
      if (!hasRole(callerRole, body.role)) {
        throw new HttpProblem(
          403,
          "ROLE_FORBIDDEN",
          `A key cannot have a higher role than yours (${callerRole}).`,
        );
      }
      const created = await c.var.deps.auth.api.createApiKey({
        body: {
          name: body.name,
          organizationId: workspaceId,
          userId,
          metadata: { role: body.role, createdBy: userId },
          ...(body.expiresInDays ? { expiresIn: body.expiresInDays * 86_400 } : {}),
        },
      });
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId,
        action: "api_key.created",
        target: { type: "api_key", id: created.id },
        data: { name: body.name, role: body.role, expiresAt: isoOrNull(created.expiresAt) },
      });
      const row = await findKey(c, created.id);
      return c.json({ ...toApiKey(row), key: created.key }, 201);
    })
    .openapi(listKeys, async (c) => {
      const seesAll = hasRole(c.var.workspace.role, "admin");
      const me = personId(c);
      const keys = (await keysQuery(c).execute()).map(toApiKey);
      return c.json({ items: keys.filter((key) => seesAll || key.createdBy === me) }, 200);
    })
    .openapi(revokeKey, async (c) => {
      const { keyId } = c.req.valid("param");
      const key = toApiKey(await findKey(c, keyId));
      if (!hasRole(c.var.workspace.role, "admin") && key.createdBy !== personId(c)) throw notFound("API key");
      if (key.enabled) {
        await c.var.deps.database.db
          .updateTable("apikey")
          .set({ enabled: false, updatedAt: new Date() })
          .where("id", "=", keyId)
          .execute();
        await c.var.deps.audit.record({
          actor: actorOf(c.var.principal),
          workspaceId: c.var.workspace.workspaceId,
          action: "api_key.revoked",
          target: { type: "api_key", id: keyId },
          data: { name: key.name },
        });
      }
      return c.body(null, 204);
    });
}

function personId(c: Context<AppEnv>): string {
  const principal = c.var.principal;
  if (principal.kind !== "user") throw new Error("api-key routes are for people only");
  return principal.userId;
}

const keysQuery = (c: Context<AppEnv>) =>
  c.var.deps.database.db
    .selectFrom("apikey")
    .select(["id", "name", "start", "metadata", "enabled", "createdAt", "expiresAt", "lastRequest"])
    .where("referenceId", "=", c.var.workspace.workspaceId)
    .orderBy("createdAt", "desc");

type KeyRow = Awaited<ReturnType<ReturnType<typeof keysQuery>["executeTakeFirstOrThrow"]>>;

async function findKey(c: Context<AppEnv>, keyId: string): Promise<KeyRow> {
  const row = await keysQuery(c).where("id", "=", keyId).executeTakeFirst();
  if (!row) throw notFound("API key");
  return row;
}

function toApiKey(row: KeyRow): z.infer<typeof ApiKeySchema> {
  const metadata = parseKeyMetadata(row.metadata);
  return {
    id: row.id,
    name: row.name ?? row.id,
    start: row.start,
    role: isWorkspaceRole(metadata.role) ? metadata.role : "viewer",
    createdBy: typeof metadata.createdBy === "string" ? metadata.createdBy : "",
    enabled: row.enabled !== false,
    createdAt: iso(row.createdAt),
    expiresAt: isoOrNull(row.expiresAt),
    lastUsedAt: isoOrNull(row.lastRequest),
  };
}
