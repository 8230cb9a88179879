import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { WORKSPACE_ROLES } from "../access/roles.ts";
import { createRouter } from "../http/router.ts";

const MeSchema = z
  .discriminatedUnion("kind", [
    z.object({
      kind: z.literal("user"),
      userId: z.string(),
      email: z.string(),
      name: z.string(),
      isDeploymentOwner: z.boolean(),
    }),
    z.object({
      kind: z.literal("api_key"),
      keyId: z.string(),
      name: z.string(),
      workspaceId: z.string(),
      role: z.enum(WORKSPACE_ROLES),
    }),
  ])
  .openapi("Me");

const me = defineRoute(
  { kind: "signed-in" },
  {
    operationId: "getMe",
    method: "get",
    path: "/v1/me",
    summary: "Who the caller is",
    tags: ["Accounts"],
    responses: { 200: { description: "OK", content: { "application/json": { schema: MeSchema } } } },
  },
);

export function accountRoutes() {
  return createRouter().openapi(me, async (c) => {
    const principal = c.var.principal;
    if (principal.kind === "api_key") {
      const { keyId, name, workspaceId, role } = principal;
      return c.json({ kind: "api_key" as const, keyId, name, workspaceId, role }, 200);
    }
    if (principal.kind !== "user") throw new Error("the signed-in guard admits only users and keys");
    const settings = await c.var.deps.database.db
      .selectFrom("deployment_settings")
      .select("owner_user_id")
      .executeTakeFirstOrThrow();
    return c.json(
      {
        kind: "user" as const,
        userId: principal.userId,
        email: principal.email,
        name: principal.name,
        isDeploymentOwner: settings.owner_user_id === principal.userId,
      },
      200,
    );
  });
}
