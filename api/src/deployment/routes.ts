import { z } from "@hono/zod-openapi";
import { defineRoute } from "../access/define-route.ts";
import { actorOf } from "../auth/principal.ts";
import { iso } from "../http/iso.ts";
import { createRouter } from "../http/router.ts";

const SettingsSchema = z
  .object({
    ownerUserId: z.string().nullable(),
    signupsOpen: z.boolean(),
    computerHost: z.enum(["isolated", "this-host"]),
    updatedAt: z.string().datetime(),
  })
  .openapi("DeploymentSettings");

const getSettings = defineRoute(
  { kind: "deployment-owner" },
  {
    method: "get",
    path: "/v1/deployment/settings",
    summary: "Deployment settings",
    tags: ["Deployment"],
    responses: { 200: { description: "OK", content: { "application/json": { schema: SettingsSchema } } } },
  },
);

const updateSettings = defineRoute(
  { kind: "deployment-owner" },
  {
    method: "patch",
    path: "/v1/deployment/settings",
    summary: "Open or close sign-ups",
    tags: ["Deployment"],
    request: {
      body: {
        required: true,
        content: {
          "application/json": {
            schema: z.object({ signupsOpen: z.boolean() }).strict().openapi("UpdateDeploymentSettings"),
          },
        },
      },
    },
    responses: {
      200: { description: "Updated", content: { "application/json": { schema: SettingsSchema } } },
    },
  },
);

export function deploymentRoutes() {
  return createRouter()
    .openapi(getSettings, async (c) => {
      const row = await c.var.deps.database.db
        .selectFrom("deployment_settings")
        .selectAll()
        .executeTakeFirstOrThrow();
      return c.json(toSettings(row), 200);
    })
    .openapi(updateSettings, async (c) => {
      const { signupsOpen } = c.req.valid("json");
      const row = await c.var.deps.database.db
        .updateTable("deployment_settings")
        .set({ signups_open: signupsOpen, updated_at: new Date() })
        .returningAll()
        .executeTakeFirstOrThrow();
      await c.var.deps.audit.record({
        actor: actorOf(c.var.principal),
        action: signupsOpen ? "deployment.signups_opened" : "deployment.signups_closed",
        target: { type: "deployment", id: "settings" },
      });
      return c.json(toSettings(row), 200);
    });
}

function toSettings(row: {
  owner_user_id: string | null;
  signups_open: boolean;
  computer_host: "isolated" | "this-host";
  updated_at: Date;
}): z.infer<typeof SettingsSchema> {
  return {
    ownerUserId: row.owner_user_id,
    signupsOpen: row.signups_open,
    computerHost: row.computer_host,
    updatedAt: iso(row.updated_at),
  };
}
