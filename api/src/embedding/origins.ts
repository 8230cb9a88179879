import { bareOrigin, MAX_EMBED_ORIGINS } from "@cubicle/config";
import type { Database } from "@cubicle/db";
import { z } from "@hono/zod-openapi";
import type { Kysely } from "kysely";
import type { AuditActor, AuditLog } from "../audit/audit-log.ts";

export const EmbedOrigin = z
  .string()
  .max(2_048)
  .transform((text, ctx) => {
    const origin = bareOrigin(text);
    if (origin === undefined) {
      ctx.addIssue({
        code: "custom",
        message: `"${text}" is not a bare origin like https://tools.example.com (scheme, host and port only)`,
      });
      return z.NEVER;
    }
    return origin;
  })
  .openapi({ example: "https://tools.example.com" });

export const EmbedOriginsSchema = z
  .object({
    origins: z
      .array(EmbedOrigin)
      .max(MAX_EMBED_ORIGINS)
      .transform((origins) => [...new Set(origins)])
      .openapi({
        description:
          "Web origins whose pages may open this workspace's screens (through the proxy) and frame its " +
          `embed page, besides the dashboard's own. Bare origins, at most ${MAX_EMBED_ORIGINS}.`,
      }),
  })
  .openapi("EmbedOrigins");

/** A workspace's embed origins; none until an admin lists some. */
export async function embedOriginsOf(db: Kysely<Database>, workspaceId: string): Promise<string[]> {
  const row = await db
    .selectFrom("workspace_embed_origins")
    .select("origins")
    .where("workspace_id", "=", workspaceId)
    .executeTakeFirst();
  return row?.origins ?? [];
}

/**
 * Stores the list with its audit record (before and after) in one transaction. Its trigger
 * announces the change, so proxies close sockets opened from an origin no longer listed.
 */
export function setEmbedOrigins(
  deps: { database: { db: Kysely<Database> }; audit: AuditLog },
  workspaceId: string,
  after: string[],
  actor: AuditActor,
): Promise<void> {
  return deps.database.db.transaction().execute(async (trx) => {
    const before = await embedOriginsOf(trx, workspaceId);
    const origins = JSON.stringify(after);
    await trx
      .insertInto("workspace_embed_origins")
      .values({ workspace_id: workspaceId, origins })
      .onConflict((oc) => oc.column("workspace_id").doUpdateSet({ origins, updated_at: new Date() }))
      .execute();
    await deps.audit.record(
      {
        actor,
        workspaceId,
        action: "workspace.embed_origins_changed",
        target: { type: "workspace", id: workspaceId },
        data: { before, after },
      },
      trx,
    );
  });
}
