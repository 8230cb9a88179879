import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { WORKSPACE_ROLES } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import { iso } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

const WorkspaceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    createdAt: z.string().datetime(),
    role: z.enum(WORKSPACE_ROLES).openapi({ description: "The caller's role in this workspace." }),
  })
  .openapi("Workspace");

const CreateWorkspaceSchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    slug: z
      .string()
      .regex(/^[a-z0-9](?:[a-z0-9-]{1,46})[a-z0-9]$/, "3–48 lowercase letters, digits and dashes")
      .optional(),
  })
  .openapi("CreateWorkspace");

const createWorkspace = defineRoute(
  { kind: "signed-in", people: true },
  {
    operationId: "createWorkspace",
    method: "post",
    path: "/v1/workspaces",
    summary: "Create a workspace; the caller becomes its owner",
    tags: ["Workspaces"],
    request: { body: { required: true, content: { "application/json": { schema: CreateWorkspaceSchema } } } },
    responses: {
      201: { description: "Created", content: { "application/json": { schema: WorkspaceSchema } } },
      409: { description: "The slug is taken" },
    },
  },
);

const listWorkspaces = defineRoute(
  { kind: "signed-in" },
  {
    operationId: "listWorkspaces",
    method: "get",
    path: "/v1/workspaces",
    summary: "Workspaces the caller belongs to (an API key sees its own)",
    tags: ["Workspaces"],
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(WorkspaceSchema) }) } },
      },
    },
  },
);

const getWorkspace = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "getWorkspace",
    method: "get",
    path: "/v1/workspaces/{workspaceId}",
    summary: "One workspace",
    tags: ["Workspaces"],
    request: { params: WorkspaceIdParam },
    responses: { 200: { description: "OK", content: { "application/json": { schema: WorkspaceSchema } } } },
  },
);

export function workspaceRoutes() {
  return createRouter()
    .openapi(createWorkspace, async (c) => {
      const { auth, audit } = c.var.deps;
      const body = c.req.valid("json");
      const slug = body.slug ?? slugFrom(body.name);
      const taken = await c.var.deps.database.db
        .selectFrom("organization")
        .select("id")
        .where("slug", "=", slug)
        .executeTakeFirst();
      if (taken) throw new HttpProblem(409, "SLUG_TAKEN", `The slug "${slug}" is taken; choose another.`);
      const created = await auth.api.createOrganization({
        headers: c.req.raw.headers,
        body: { name: body.name, slug },
      });
      await audit.record({
        actor: actorOf(c.var.principal),
        workspaceId: created.id,
        action: "workspace.created",
        target: { type: "workspace", id: created.id },
        data: { name: created.name, slug: created.slug },
      });
      return c.json(
        {
          id: created.id,
          name: created.name,
          slug: created.slug,
          createdAt: iso(created.createdAt),
          role: "owner" as const,
        },
        201,
      );
    })
    .openapi(listWorkspaces, async (c) => {
      const principal = c.var.principal;
      let query = c.var.deps.database.db
        .selectFrom("organization")
        .innerJoin("member", "member.organizationId", "organization.id")
        .select([
          "organization.id",
          "organization.name",
          "organization.slug",
          "organization.createdAt",
          "member.role",
        ])
        .orderBy("organization.createdAt", "asc");
      if (principal.kind === "api_key") {
        query = query
          .where("organization.id", "=", principal.workspaceId)
          .where("member.userId", "=", principal.createdBy);
      } else if (principal.kind === "user") {
        query = query.where("member.userId", "=", principal.userId);
      }
      const rows = await query.execute();
      const items = rows.map((row) => ({
        id: row.id,
        name: row.name,
        slug: row.slug,
        createdAt: iso(row.createdAt),
        role: principal.kind === "api_key" ? principal.role : WorkspaceSchema.shape.role.parse(row.role),
      }));
      return c.json({ items }, 200);
    })
    .openapi(getWorkspace, async (c) => {
      const { workspaceId, role } = c.var.workspace;
      const row = await c.var.deps.database.db
        .selectFrom("organization")
        .select(["id", "name", "slug", "createdAt"])
        .where("id", "=", workspaceId)
        .executeTakeFirstOrThrow();
      return c.json({ ...row, createdAt: iso(row.createdAt), role }, 200);
    });
}

function slugFrom(name: string): string {
  const base = name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40);
  return `${base || "workspace"}-${crypto.randomUUID().slice(0, 6)}`;
}
