import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { hasRole, isWorkspaceRole, WORKSPACE_ROLES, type WorkspaceRole } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { iso } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

const MemberSchema = z
  .object({
    id: z.string(),
    userId: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.enum(WORKSPACE_ROLES),
    joinedAt: z.string().datetime(),
  })
  .openapi("Member");

const MemberParams = WorkspaceIdParam.extend({
  memberId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "memberId", in: "path" } }),
});

const listMembers = defineRoute(
  { kind: "workspace", minRole: "viewer" },
  {
    operationId: "listMembers",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/members",
    summary: "Members of the workspace and their roles",
    tags: ["Members"],
    request: { params: WorkspaceIdParam },
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(MemberSchema) }) } },
      },
    },
  },
);

const changeRole = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "changeMemberRole",
    method: "patch",
    path: "/v1/workspaces/{workspaceId}/members/{memberId}",
    summary: "Change a member's role",
    description: "Only an owner may make someone an owner or change an owner's role; the last owner stays.",
    tags: ["Members"],
    request: {
      params: MemberParams,
      body: {
        required: true,
        content: {
          "application/json": { schema: z.object({ role: z.enum(WORKSPACE_ROLES) }).openapi("ChangeRole") },
        },
      },
    },
    responses: {
      200: { description: "Changed", content: { "application/json": { schema: MemberSchema } } },
      409: { description: "The workspace would be left without an owner" },
    },
  },
);

const removeMember = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "removeMember",
    method: "delete",
    path: "/v1/workspaces/{workspaceId}/members/{memberId}",
    summary: "Remove a member from the workspace",
    tags: ["Members"],
    request: { params: MemberParams },
    responses: {
      204: { description: "Removed" },
      409: { description: "The workspace would be left without an owner" },
    },
  },
);

export function memberRoutes() {
  return createRouter()
    .openapi(listMembers, async (c) => {
      const rows = await membersQuery(c)
        .where("member.organizationId", "=", c.var.workspace.workspaceId)
        .execute();
      return c.json({ items: rows.map(toMember) }, 200);
    })
    .openapi(changeRole, async (c) => {
      const { memberId } = c.req.valid("param");
      const { role } = c.req.valid("json");
      const member = await findMember(c, memberId);
      assertMayTouchOwners(c.var.workspace.role, [member.role, role]);
      if (member.role === "owner" && role !== "owner") await assertAnotherOwner(c);
      await c.var.deps.auth.api.updateMemberRole({
        headers: c.req.raw.headers,
        body: { memberId, role, organizationId: c.var.workspace.workspaceId },
      });
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId: c.var.workspace.workspaceId,
        action: "member.role_changed",
        target: { type: "member", id: memberId },
        data: { userId: member.userId, email: member.email, from: member.role, to: role },
      });
      return c.json(toMember({ ...member, role }), 200);
    })
    .openapi(removeMember, async (c) => {
      const { memberId } = c.req.valid("param");
      const member = await findMember(c, memberId);
      assertMayTouchOwners(c.var.workspace.role, [member.role]);
      if (member.role === "owner") await assertAnotherOwner(c);
      await c.var.deps.auth.api.removeMember({
        headers: c.req.raw.headers,
        body: { memberIdOrEmail: memberId, organizationId: c.var.workspace.workspaceId },
      });
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId: c.var.workspace.workspaceId,
        action: "member.removed",
        target: { type: "member", id: memberId },
        data: { userId: member.userId, email: member.email, role: member.role },
      });
      return c.body(null, 204);
    });
}

const membersQuery = (c: Context<AppEnv>) =>
  c.var.deps.database.db
    .selectFrom("member")
    .innerJoin("user", "user.id", "member.userId")
    .select(["member.id", "member.userId", "member.role", "member.createdAt", "user.name", "user.email"])
    .orderBy("member.createdAt", "asc");

type MemberRow = Awaited<ReturnType<ReturnType<typeof membersQuery>["executeTakeFirstOrThrow"]>>;

function toMember(row: MemberRow) {
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    email: row.email,
    role: isWorkspaceRole(row.role) ? row.role : ("viewer" as const),
    joinedAt: iso(row.createdAt),
  };
}

async function findMember(c: Context<AppEnv>, memberId: string) {
  const row = await membersQuery(c)
    .where("member.organizationId", "=", c.var.workspace.workspaceId)
    .where("member.id", "=", memberId)
    .executeTakeFirst();
  if (!row) throw notFound("member");
  return row;
}

function assertMayTouchOwners(callerRole: WorkspaceRole, roles: string[]) {
  if (roles.includes("owner") && !hasRole(callerRole, "owner")) {
    throw new HttpProblem(403, "OWNER_REQUIRED", "Only an owner may grant, change or remove the owner role.");
  }
}

async function assertAnotherOwner(c: Context<AppEnv>) {
  const owners = await c.var.deps.database.db
    .selectFrom("member")
    .select((eb) => eb.fn.countAll<number>().as("count"))
    .where("organizationId", "=", c.var.workspace.workspaceId)
    .where("role", "=", "owner")
    .executeTakeFirstOrThrow();
  if (Number(owners.count) < 2) {
    throw new HttpProblem(
      409,
      "LAST_OWNER",
      "A workspace keeps at least one owner; make someone else owner first.",
    );
  }
}
