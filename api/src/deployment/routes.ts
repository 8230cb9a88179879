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
    operationId: "getDeploymentSettings",
    method: "get",
    path: "/v1/deployment/settings",
    summary: "Deployment settings",
    tags: ["Deployment"],
    responses: { 200: { description: "OK", content: { "application/json": { schema: SettingsSchema } } } },
  },
);

const UpdateSettingsSchema = z
  .object({
    signupsOpen: z.boolean().optional(),
    computerHost: z
      .enum(["isolated", "this-host"])
      .optional()
      .openapi({
        description:
          "`this-host` makes new Docker computers run on this host itself, as the service's user, with its " +
          "files and network. Never use it on a shared or public service.",
      }),
  })
  .strict()
  .refine((body) => body.signupsOpen !== undefined || body.computerHost !== undefined, {
    message: "name at least one setting to change",
  })
  .openapi("UpdateDeploymentSettings");

const updateSettings = defineRoute(
  { kind: "deployment-owner" },
  {
    operationId: "updateDeploymentSettings",
    method: "patch",
    path: "/v1/deployment/settings",
    summary: "Open or close sign-ups; choose where Docker computers run",
    tags: ["Deployment"],
    request: { body: { required: true, content: { "application/json": { schema: UpdateSettingsSchema } } } },
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
      const change = c.req.valid("json");
      const { db } = c.var.deps.database;
      const { before, after } = await db.transaction().execute(async (trx) => {
        const before = await trx
          .selectFrom("deployment_settings")
          .selectAll()
          .forUpdate()
          .executeTakeFirstOrThrow();
        const after = await trx
          .updateTable("deployment_settings")
          .set({
            ...(change.signupsOpen === undefined ? {} : { signups_open: change.signupsOpen }),
            ...(change.computerHost === undefined ? {} : { computer_host: change.computerHost }),
            updated_at: new Date(),
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return { before, after };
      });
      const actor = actorOf(c.var.principal);
      const target = { type: "deployment", id: "settings" };
      if (before.signups_open !== after.signups_open) {
        const action = after.signups_open ? "deployment.signups_opened" : "deployment.signups_closed";
        await c.var.deps.audit.record({ actor, action, target });
      }
      if (before.computer_host !== after.computer_host) {
        await c.var.deps.audit.record({
          actor,
          action: "deployment.computer_host_changed",
          target,
          data: { from: before.computer_host, to: after.computer_host },
        });
        if (after.computer_host === "this-host") {
          c.var.deps.logger.warn(
            "computer host set to this-host: new Docker computers run on this host itself",
          );
        }
      }
      return c.json(toSettings(after), 200);
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
