import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { defineRoute } from "../access/define-route.ts";
import { hasRole, WORKSPACE_ROLES } from "../access/roles.ts";
import { actorOf } from "../auth/principal.ts";
import type { AppEnv } from "../context.ts";
import { iso } from "../http/iso.ts";
import { WorkspaceIdParam } from "../http/params.ts";
import { HttpProblem, notFound } from "../http/problem.ts";
import { createRouter } from "../http/router.ts";

const INVITATION_STATUSES = ["pending", "accepted", "rejected", "canceled"] as const;

const InvitationSchema = z
  .object({
    id: z.string(),
    workspaceId: z.string(),
    workspaceName: z.string(),
    email: z.string(),
    role: z.enum(WORKSPACE_ROLES),
    status: z.enum(INVITATION_STATUSES),
    expiresAt: z.string().datetime(),
    createdAt: z.string().datetime(),
    inviterId: z.string(),
  })
  .openapi("Invitation");

const InvitationParams = WorkspaceIdParam.extend({
  invitationId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "invitationId", in: "path" } }),
});
const OwnInvitationParams = InvitationParams.pick({ invitationId: true });

const createInvitation = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "createInvitation",
    method: "post",
    path: "/v1/workspaces/{workspaceId}/invitations",
    summary: "Invite someone by email",
    description:
      "Only an owner may invite another owner. The invitee signs up or in with that email and accepts.",
    tags: ["Invitations"],
    request: {
      params: WorkspaceIdParam,
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z
              .object({
                email: z.string().trim().toLowerCase().email().max(254),
                role: z.enum(WORKSPACE_ROLES),
              })
              .openapi("CreateInvitation"),
          },
        },
      },
    },
    responses: {
      201: { description: "Invited", content: { "application/json": { schema: InvitationSchema } } },
      409: { description: "Already a member or already invited" },
    },
  },
);

const listInvitations = defineRoute(
  { kind: "workspace", minRole: "admin" },
  {
    operationId: "listInvitations",
    method: "get",
    path: "/v1/workspaces/{workspaceId}/invitations",
    summary: "Invitations of the workspace",
    tags: ["Invitations"],
    request: { params: WorkspaceIdParam },
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(InvitationSchema) }) } },
      },
    },
  },
);

const cancelInvitation = defineRoute(
  { kind: "workspace", minRole: "admin", people: true },
  {
    operationId: "cancelInvitation",
    method: "delete",
    path: "/v1/workspaces/{workspaceId}/invitations/{invitationId}",
    summary: "Cancel a pending invitation",
    tags: ["Invitations"],
    request: { params: InvitationParams },
    responses: { 204: { description: "Canceled" }, 409: { description: "No longer pending" } },
  },
);

const myInvitations = defineRoute(
  { kind: "signed-in", people: true },
  {
    operationId: "listMyInvitations",
    method: "get",
    path: "/v1/invitations",
    summary: "Pending invitations addressed to the caller's email",
    tags: ["Invitations"],
    responses: {
      200: {
        description: "OK",
        content: { "application/json": { schema: z.object({ items: z.array(InvitationSchema) }) } },
      },
    },
  },
);

const acceptInvitation = defineRoute(
  { kind: "signed-in", people: true },
  {
    operationId: "acceptInvitation",
    method: "post",
    path: "/v1/invitations/{invitationId}/accept",
    summary: "Accept an invitation addressed to the caller",
    tags: ["Invitations"],
    request: { params: OwnInvitationParams },
    responses: {
      200: {
        description: "Joined",
        content: {
          "application/json": {
            schema: z
              .object({ workspaceId: z.string(), memberId: z.string(), role: z.enum(WORKSPACE_ROLES) })
              .openapi("Membership"),
          },
        },
      },
      409: { description: "No longer pending or expired" },
    },
  },
);

export function invitationRoutes() {
  return createRouter()
    .openapi(createInvitation, async (c) => {
      const { email, role } = c.req.valid("json");
      const { workspaceId } = c.var.workspace;
      if (role === "owner" && !hasRole(c.var.workspace.role, "owner")) {
        throw new HttpProblem(403, "OWNER_REQUIRED", "Only an owner may invite another owner.");
      }
      const { db } = c.var.deps.database;
      const existing = await db
        .selectFrom("member")
        .innerJoin("user", "user.id", "member.userId")
        .select("member.id")
        .where("member.organizationId", "=", workspaceId)
        .where("user.email", "=", email)
        .executeTakeFirst();
      if (existing)
        throw new HttpProblem(409, "ALREADY_MEMBER", `${email} is already a member of this workspace.`);
      const pending = await db
        .selectFrom("invitation")
        .select("id")
        .where("organizationId", "=", workspaceId)
        .where("email", "=", email)
        .where("status", "=", "pending")
        .where("expiresAt", ">", new Date())
        .executeTakeFirst();
      if (pending)
        throw new HttpProblem(
          409,
          "ALREADY_INVITED",
          `${email} already has a pending invitation; cancel it first.`,
        );
      const invitation = await c.var.deps.auth.api.createInvitation({
        headers: c.req.raw.headers,
        body: { email, role, organizationId: workspaceId },
      });
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId,
        action: "invitation.created",
        target: { type: "invitation", id: invitation.id },
        data: { email, role },
      });
      return c.json(await loadInvitation(c, invitation.id), 201);
    })
    .openapi(listInvitations, async (c) => {
      const rows = await invitationsQuery(c)
        .where("invitation.organizationId", "=", c.var.workspace.workspaceId)
        .execute();
      return c.json({ items: rows.map(toInvitation) }, 200);
    })
    .openapi(cancelInvitation, async (c) => {
      const { invitationId } = c.req.valid("param");
      const { workspaceId } = c.var.workspace;
      const invitation = await loadInvitation(c, invitationId);
      if (invitation.workspaceId !== workspaceId) throw notFound("invitation");
      if (invitation.status !== "pending") {
        throw new HttpProblem(
          409,
          "INVITATION_NOT_PENDING",
          `The invitation is already ${invitation.status}.`,
        );
      }
      await c.var.deps.auth.api.cancelInvitation({ headers: c.req.raw.headers, body: { invitationId } });
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        workspaceId,
        action: "invitation.canceled",
        target: { type: "invitation", id: invitationId },
        data: { email: invitation.email, role: invitation.role },
      });
      return c.body(null, 204);
    })
    .openapi(myInvitations, async (c) => {
      const email = c.var.principal.kind === "user" ? c.var.principal.email : "";
      const rows = await invitationsQuery(c)
        .where("invitation.email", "=", email.toLowerCase())
        .where("invitation.status", "=", "pending")
        .where("invitation.expiresAt", ">", new Date())
        .execute();
      return c.json({ items: rows.map(toInvitation) }, 200);
    })
    .openapi(acceptInvitation, async (c) => {
      const { invitationId } = c.req.valid("param");
      const principal = c.var.principal;
      const invitation = await loadInvitation(c, invitationId).catch(() => null);
      // Someone else's invitation is not acknowledged to exist.
      if (!invitation || principal.kind !== "user" || invitation.email !== principal.email.toLowerCase()) {
        throw notFound("invitation");
      }
      if (invitation.status !== "pending" || new Date(invitation.expiresAt) <= new Date()) {
        throw new HttpProblem(
          409,
          "INVITATION_NOT_PENDING",
          "The invitation is no longer pending or has expired.",
        );
      }
      const accepted = await c.var.deps.auth.api.acceptInvitation({
        headers: c.req.raw.headers,
        body: { invitationId },
      });
      if (!accepted?.member)
        throw new HttpProblem(409, "INVITATION_NOT_PENDING", "The invitation could not be accepted.");
      await c.var.deps.audit.record({
        actor: actorOf(principal),
        workspaceId: invitation.workspaceId,
        action: "invitation.accepted",
        target: { type: "invitation", id: invitationId },
        data: { memberId: accepted.member.id, role: invitation.role },
      });
      return c.json(
        { workspaceId: invitation.workspaceId, memberId: accepted.member.id, role: invitation.role },
        200,
      );
    });
}

const invitationsQuery = (c: Context<AppEnv>) =>
  c.var.deps.database.db
    .selectFrom("invitation")
    .innerJoin("organization", "organization.id", "invitation.organizationId")
    .select([
      "invitation.id",
      "invitation.organizationId",
      "organization.name as workspaceName",
      "invitation.email",
      "invitation.role",
      "invitation.status",
      "invitation.expiresAt",
      "invitation.createdAt",
      "invitation.inviterId",
    ])
    .orderBy("invitation.createdAt", "desc");

type InvitationRow = Awaited<ReturnType<ReturnType<typeof invitationsQuery>["executeTakeFirstOrThrow"]>>;

function toInvitation(row: InvitationRow): z.infer<typeof InvitationSchema> {
  return {
    id: row.id,
    workspaceId: row.organizationId,
    workspaceName: row.workspaceName,
    email: row.email,
    role: InvitationSchema.shape.role.catch("viewer").parse(row.role),
    status: InvitationSchema.shape.status.catch("canceled").parse(row.status),
    expiresAt: iso(row.expiresAt),
    createdAt: iso(row.createdAt),
    inviterId: row.inviterId,
  };
}

async function loadInvitation(c: Context<AppEnv>, invitationId: string) {
  const row = await invitationsQuery(c).where("invitation.id", "=", invitationId).executeTakeFirst();
  if (!row) throw notFound("invitation");
  return toInvitation(row);
}
