import { apiKey } from "@better-auth/api-key";
import type { Database } from "@cubicle/db";
import { betterAuth } from "better-auth";
import { APIError, createAuthMiddleware, isAPIError } from "better-auth/api";
import { organization } from "better-auth/plugins/organization";
import type { Kysely } from "kysely";
import type { AuditLog } from "../audit/audit-log.ts";
import type { ApiEnv } from "../config/env.ts";
import { CLIENT_IP_HEADER, currentRequest } from "../http/request-context.ts";
import type { Logger } from "../observability/logger.ts";
import { accessControl, workspaceRoles } from "./access-control.ts";

export const AUTH_BASE_PATH = "/api/auth";
export const API_KEY_PREFIX = "cub_";
const INVITATION_LIFETIME_SECONDS = 7 * 24 * 3600;

interface AuthOptions {
  db: Kysely<Database>;
  env: ApiEnv;
  secret: string;
  audit: AuditLog;
  logger: Logger;
}

/**
 * Better Auth on Cubicle's database: email + password sessions for people, the organization
 * plugin for workspaces, members, roles and invitations, and workspace-owned API keys for
 * automations. Deployment rules (first account owns the deployment, closed signups) and the
 * audit of sign-ups and sign-ins live in its hooks so that no path around them exists.
 */
export function createAuth({ db, env, secret, audit, logger }: AuthOptions) {
  return betterAuth({
    appName: "Cubicle",
    database: { db, type: "postgres" },
    secret,
    baseURL: env.publicUrl,
    basePath: AUTH_BASE_PATH,
    trustedOrigins: [...env.trustedOrigins],
    emailAndPassword: { enabled: true, minPasswordLength: 10, maxPasswordLength: 256 },
    // The only address Better Auth sees is the client's as request-context.ts decided it
    // (TRUSTED_PROXIES): a browser's own forwarding headers never reach it.
    advanced: { ipAddress: { ipAddressHeaders: [CLIENT_IP_HEADER] } },
    // Tries are counted in the database (table rateLimit, per client address and path), so all
    // replicas of the api share one count; Better Auth's rules: 3 sign-ins or sign-ups in 10 s.
    rateLimit: { enabled: env.authRateLimit, storage: "database" },
    telemetry: { enabled: false },
    logger: {
      level: "warn",
      log: (level, message, ...args) => {
        const request = currentRequest();
        const failure = args.find((arg) => arg instanceof Error);
        // Better Auth's own 500s drop the cause; authenticate.ts needs it to tell an outage apart
        if (request && failure) request.authFailure = failure;
        logger[level === "debug" ? "debug" : level === "info" ? "info" : "warn"]({ level }, message);
      },
    },
    databaseHooks: {
      user: {
        create: {
          before: async (user) => {
            const settings = await db
              .selectFrom("deployment_settings")
              .select(["signups_open", "owner_user_id"])
              .executeTakeFirstOrThrow();
            if (!settings.signups_open && settings.owner_user_id !== null) {
              throw new APIError("FORBIDDEN", {
                code: "SIGNUPS_CLOSED",
                message: "Sign-ups are closed on this deployment; ask its owner for an invitation.",
              });
            }
            return { data: user };
          },
          after: async (user) => {
            const claimed = await db
              .updateTable("deployment_settings")
              .set({ owner_user_id: user.id, updated_at: new Date() })
              .where("owner_user_id", "is", null)
              .executeTakeFirst();
            if (claimed.numUpdatedRows > 0n) {
              await audit.record({
                actor: { type: "user", id: user.id, label: user.email },
                action: "deployment.owner_assigned",
                target: { type: "user", id: user.id },
              });
            }
          },
        },
      },
    },
    hooks: {
      after: createAuthMiddleware(async (ctx) => {
        const action = AUDITED_AUTH_PATHS[ctx.path];
        if (!action) return;
        const returned = ctx.context.returned;
        const email = typeof ctx.body?.email === "string" ? ctx.body.email.toLowerCase() : null;
        if (isAPIError(returned)) {
          await audit.record({
            actor: { type: "anonymous", id: null, label: email },
            action: `${action}_failed`,
            data: { code: returned.body?.code ?? returned.status, status: returned.statusCode },
          });
          return;
        }
        const user = ctx.context.newSession?.user;
        if (!user) return;
        await audit.record({
          actor: { type: "user", id: user.id, label: user.email },
          action,
          target: { type: "user", id: user.id },
        });
      }),
    },
    plugins: [
      organization({
        ac: accessControl,
        roles: workspaceRoles,
        creatorRole: "owner",
        invitationExpiresIn: INVITATION_LIFETIME_SECONDS,
        // Cubicle's API is the way in; its routes check roles, then call these endpoints.
        allowUserToCreateOrganization: true,
      }),
      apiKey({
        references: "organization",
        defaultPrefix: API_KEY_PREFIX,
        enableMetadata: true,
        requireName: true,
        // Keys authenticate Cubicle's REST API (auth/authenticate.ts), never Better Auth sessions.
        enableSessionForAPIKeys: false,
        rateLimit: { enabled: false },
        keyExpiration: { defaultExpiresIn: null, minExpiresIn: 1, maxExpiresIn: 365 },
      }),
    ],
  });
}

export type CubicleAuth = ReturnType<typeof createAuth>;

const AUDITED_AUTH_PATHS: Record<string, string> = {
  "/sign-up/email": "auth.sign_up",
  "/sign-in/email": "auth.sign_in",
};
