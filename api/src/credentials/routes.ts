import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { iso } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

/** What the API ever says about a credential: never the secret, never the ciphertext. */
const CredentialSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.string(),
    createdBy: z.string().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("ConnectorCredential");

const SecretValue = z.string().min(1).max(16_384).openapi({ description: "Write-only; never returned." });

const CredentialParams = WorkspaceIdParam.extend({
  credentialId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "credentialId", in: "path" } }),
});

const createCredential = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "createConnectorCredential",
    method: "post",
    path: "/v1/workspaces/{workspaceId}/connector-credentials",
    summary: "Store a connector credential (write-only)",
    tags: ["Connector credentials"],
    request: {
      params: WorkspaceIdParam,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z
              .object({
                name: z.string().trim().min(1).max(100),
                kind: z
                  .string()
                  .trim()
                  .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "lowercase letters, digits, . _ -"),
                secret: SecretValue,
              })
              .openapi("CreateConnectorCredential"),
          },
        },
      },
    },
    responses: {
      201: { description: "Stored", content: { "application/json": { schema: CredentialSchema } } },
      409: { description: "The name is taken in this workspace" },
    },
  },
);

const listCredentials = defineRoute(
  { kind: "workspace", minRole: "member" },
  {
    operationId: "listConnectorCredentials",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/connector-credentials",
    summary: "Connector credentials of the workspace (names and kinds only)",
    tags: ["Connector credentials"],
    request: { params: WorkspaceIdParam },
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(CredentialSchema) }) } },
      },
    },
  },
);

const replaceSecret = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "replaceConnectorCredentialSecret",
    method: "put",
    path: "/v1/workspaces/{workspaceId}/connector-credentials/{credentialId}/secret",
    summary: "Replace a credential's secret",
    tags: ["Connector credentials"],
    request: {
      params: CredentialParams,
      body: {
        required: true,
        content: {
          "application/json": { schema: z.object({ secret: SecretValue }).openapi("ReplaceSecret") },
        },
      },
    },
    responses: {
      200: { description: "Replaced", content: { "application/json": { schema: CredentialSchema } } },
    },
  },
);

const deleteCredential = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "deleteConnectorCredential",
    method: "delete",
    path: "/v1/workspaces/{workspaceId}/connector-credentials/{credentialId}",
    summary: "Delete a connector credential",
    tags: ["Connector credentials"],
    request: { params: CredentialParams },
    responses: { 204: { description: "Deleted" } },
  },
);

export function credentialRoutes() {
  return createRouter()
    .openapi(createCredential, async (c) => {
      const { name, kind, secret } = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      const { db } = c.var.deps.database;
      const taken = await db
        .selectFrom("connector_credentials")
        .select("id")
        .where("workspace_id", "=", workspaceId)
        .where("name", "=", name)
        .executeTakeFirst();
      const nameTaken = () =>
        new HttpProblem(409, "CREDENTIAL_NAME_TAKEN", `A credential named "${name}" already exists.`);
      if (taken) throw nameTaken();
      const id = crypto.randomUUID();
      const row = await db
        .insertInto("connector_credentials")
        .values({
          id,
          workspace_id: workspaceId,
          name,
          kind,
          ciphertext: c.var.deps.cipher.encrypt(secret, sealingContext(workspaceId, id)),
          created_by: c.var.principal.kind === "user" ? c.var.principal.userId : null,
        })
        .returning(PUBLIC_COLUMNS)
        .executeTakeFirstOrThrow()
        .catch((error: unknown) => {
          // A concurrent request took the name between the check above and this insert.
          throw isUniqueViolation(error) ? nameTaken() : error;
        });
      await audited(c, "connector_credential.created", row);
      return c.json(toCredential(row), 201);
    })
    .openapi(listCredentials, async (c) => {
      const rows = await c.var.deps.database.db
        .selectFrom("connector_credentials")
        .select(PUBLIC_COLUMNS)
        .where("workspace_id", "=", c.var.workspace.workspaceId)
        .orderBy("name")
        .execute();
      return c.json({ items: rows.map(toCredential) }, 200);
    })
    .openapi(replaceSecret, async (c) => {
      const { credentialId } = c.req.valid("param");
      const { secret } = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      const row = await c.var.deps.database.db
        .updateTable("connector_credentials")
        .set({
          ciphertext: c.var.deps.cipher.encrypt(secret, sealingContext(workspaceId, credentialId)),
          updated_at: new Date(),
        })
        .where("workspace_id", "=", workspaceId)
        .where("id", "=", credentialId)
        .returning(PUBLIC_COLUMNS)
        .executeTakeFirst();
      if (!row) throw notFound("connector credential");
      await audited(c, "connector_credential.secret_replaced", row);
      return c.json(toCredential(row), 200);
    })
    .openapi(deleteCredential, async (c) => {
      const { credentialId } = c.req.valid("param");
      const row = await c.var.deps.database.db
        .deleteFrom("connector_credentials")
        .where("workspace_id", "=", c.var.workspace.workspaceId)
        .where("id", "=", credentialId)
        .returning(PUBLIC_COLUMNS)
        .executeTakeFirst();
      if (!row) throw notFound("connector credential");
      await audited(c, "connector_credential.deleted", row);
      return c.body(null, 204);
    });
}

const isUniqueViolation = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "code" in error && error.code === "23505";

/** Binds a ciphertext to its row, so it cannot be copied into another workspace's credential. */
export const sealingContext = (workspaceId: string, credentialId: string) => `${workspaceId}/${credentialId}`;

const PUBLIC_COLUMNS = ["id", "name", "kind", "created_by", "created_at", "updated_at"] as const;

interface PublicRow {
  id: string;
  name: string;
  kind: string;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

function toCredential(row: PublicRow): z.infer<typeof CredentialSchema> {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    createdBy: row.created_by,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

async function audited(c: Context<AppEnv>, action: string, row: PublicRow) {
  await c.var.deps.audit.record({
    actor: actorOf(c.var.principal),
    workspaceId: c.var.workspace.workspaceId,
    action,
    target: { type: "connector_credential", id: row.id },
    data: { name: row.name, kind: row.kind },
  });
}
