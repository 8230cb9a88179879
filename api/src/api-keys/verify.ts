import { createHash } from "node:crypto";
import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import { parseKeyMetadata } from "./key-role.ts";

/** How stale a key's "last used" time may be: the list of keys shows it to the minute. */
export const LAST_USED_PRECISION_MS = 60_000;

export interface StoredKey {
  id: string;
  name: string | null;
  /** The workspace that owns the key. */
  workspaceId: string;
  metadata: { role?: unknown; createdBy?: unknown };
}

/**
 * The stored key a presented one is, if it may be used now, or why not (the codes Better Auth's
 * api-key plugin gives: the key stays created, listed and revoked by that plugin). Checked here
 * rather than through the plugin's verify endpoint, which on every request read the key and wrote
 * its row twice (its last-request time and updatedAt): two writes that every request made with one
 * key queued on; doing without them and the endpoint's machinery took the api's CPU per request
 * under bench/api's mix from 3.5 to 2.3 ms. The last-used time is written only when it is more
 * than LAST_USED_PRECISION_MS old.
 */
export async function verifyKey(
  db: Kysely<Database>,
  presented: string,
): Promise<{ key: StoredKey } | { refused: "INVALID_API_KEY" | "KEY_DISABLED" | "KEY_EXPIRED" }> {
  // As the plugin stores keys: SHA-256, base64url without padding.
  const hashed = createHash("sha256").update(presented).digest("base64url");
  const row = await db
    .selectFrom("apikey")
    .select(["id", "name", "referenceId", "metadata", "enabled", "expiresAt", "lastRequest"])
    .where("key", "=", hashed)
    .executeTakeFirst();
  if (!row) return { refused: "INVALID_API_KEY" };
  if (row.enabled === false) return { refused: "KEY_DISABLED" };
  const now = Date.now();
  if (row.expiresAt && row.expiresAt.getTime() < now) return { refused: "KEY_EXPIRED" };
  if (!row.lastRequest || now - row.lastRequest.getTime() > LAST_USED_PRECISION_MS)
    await db
      .updateTable("apikey")
      .set({ lastRequest: new Date(now) })
      .where("id", "=", row.id)
      .execute();
  return {
    key: {
      id: row.id,
      name: row.name,
      workspaceId: row.referenceId,
      metadata: parseKeyMetadata(row.metadata),
    },
  };
}
