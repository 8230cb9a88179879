import { type Kysely, sql } from "kysely";

/**
 * Better Auth's tables (core, organization plugin, api-key plugin), written out here so that the
 * schema is ours to read and migrate. Column names are Better Auth's camelCase; Cubicle's own
 * tables (0002) are snake_case. A workspace is an `organization` row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const now = sql`CURRENT_TIMESTAMP`;

  await db.schema
    .createTable("user")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("emailVerified", "boolean", (c) => c.notNull())
    .addColumn("image", "text")
    .addColumn("createdAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .addColumn("updatedAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .execute();

  await db.schema
    .createTable("session")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("expiresAt", "timestamptz", (c) => c.notNull())
    .addColumn("token", "text", (c) => c.notNull().unique())
    .addColumn("createdAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .addColumn("updatedAt", "timestamptz", (c) => c.notNull())
    .addColumn("ipAddress", "text")
    .addColumn("userAgent", "text")
    .addColumn("userId", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
    .addColumn("activeOrganizationId", "text")
    .execute();
  await db.schema.createIndex("session_userId_idx").on("session").column("userId").execute();

  await db.schema
    .createTable("account")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("accountId", "text", (c) => c.notNull())
    .addColumn("providerId", "text", (c) => c.notNull())
    .addColumn("userId", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
    .addColumn("accessToken", "text")
    .addColumn("refreshToken", "text")
    .addColumn("idToken", "text")
    .addColumn("accessTokenExpiresAt", "timestamptz")
    .addColumn("refreshTokenExpiresAt", "timestamptz")
    .addColumn("scope", "text")
    .addColumn("password", "text")
    .addColumn("createdAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .addColumn("updatedAt", "timestamptz", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("account_userId_idx").on("account").column("userId").execute();

  await db.schema
    .createTable("verification")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("identifier", "text", (c) => c.notNull())
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("expiresAt", "timestamptz", (c) => c.notNull())
    .addColumn("createdAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .addColumn("updatedAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex("verification_identifier_idx")
    .on("verification")
    .column("identifier")
    .execute();

  await db.schema
    .createTable("organization")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("slug", "text", (c) => c.notNull().unique())
    .addColumn("logo", "text")
    .addColumn("createdAt", "timestamptz", (c) => c.notNull())
    .addColumn("metadata", "text")
    .execute();

  await db.schema
    .createTable("member")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organizationId", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("userId", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
    .addColumn("role", "text", (c) => c.notNull())
    .addColumn("createdAt", "timestamptz", (c) => c.notNull())
    .addUniqueConstraint("member_one_per_user", ["organizationId", "userId"])
    .execute();
  await db.schema.createIndex("member_userId_idx").on("member").column("userId").execute();

  await db.schema
    .createTable("invitation")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("organizationId", "text", (c) => c.notNull().references("organization.id").onDelete("cascade"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("role", "text")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("expiresAt", "timestamptz", (c) => c.notNull())
    .addColumn("createdAt", "timestamptz", (c) => c.notNull().defaultTo(now))
    .addColumn("inviterId", "text", (c) => c.notNull().references("user.id").onDelete("cascade"))
    .execute();
  await db.schema
    .createIndex("invitation_organizationId_idx")
    .on("invitation")
    .column("organizationId")
    .execute();
  await db.schema.createIndex("invitation_email_idx").on("invitation").column("email").execute();

  // `key` holds a SHA-256 hash; the plaintext is shown once at creation and never stored.
  await db.schema
    .createTable("apikey")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("configId", "text", (c) => c.notNull())
    .addColumn("name", "text")
    .addColumn("start", "text")
    .addColumn("referenceId", "text", (c) => c.notNull())
    .addColumn("prefix", "text")
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("refillInterval", "integer")
    .addColumn("refillAmount", "integer")
    .addColumn("lastRefillAt", "timestamptz")
    .addColumn("enabled", "boolean")
    .addColumn("rateLimitEnabled", "boolean")
    .addColumn("rateLimitTimeWindow", "integer")
    .addColumn("rateLimitMax", "integer")
    .addColumn("requestCount", "integer")
    .addColumn("remaining", "integer")
    .addColumn("lastRequest", "timestamptz")
    .addColumn("expiresAt", "timestamptz")
    .addColumn("createdAt", "timestamptz", (c) => c.notNull())
    .addColumn("updatedAt", "timestamptz", (c) => c.notNull())
    .addColumn("permissions", "text")
    .addColumn("metadata", "text")
    .execute();
  await db.schema.createIndex("apikey_configId_idx").on("apikey").column("configId").execute();
  await db.schema.createIndex("apikey_referenceId_idx").on("apikey").column("referenceId").execute();
  await db.schema.createIndex("apikey_key_idx").on("apikey").column("key").execute();
}
