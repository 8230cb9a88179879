/**
 * A real api for the bench's proxy to redeem capabilities at and follow control leases from, on an
 * in-memory PGlite. Run as a child process (PGlite's start blocks its thread for seconds, which in
 * the bench's own process would also hold up its signal handling), it prints `API_URL=<url>` once
 * listening and stops on SIGTERM. Needs PORT and SCREEN_CAPABILITY_KEY.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseEnv, type RunningApi, startApi } from "@cubicle/api";
import { type DatabaseHandle, openDatabase } from "@cubicle/db";

// Where api would keep files it is not given (none are expected); gone however the process ends.
const dataDir = mkdtempSync(join(tmpdir(), "cubicle-bench-api-"));
process.once("exit", () => rmSync(dataDir, { recursive: true, force: true }));

let database: DatabaseHandle | undefined;
let api: RunningApi | undefined;
process.once("SIGTERM", async () => {
  await api?.close();
  await database?.close();
  process.exit(0);
});

database = await openDatabase({ pgliteInMemory: true });
api = await startApi(
  parseEnv({
    NODE_ENV: "test",
    HOST: "127.0.0.1",
    PORT: process.env.PORT,
    DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    BETTER_AUTH_SECRET: randomBytes(32).toString("base64url"),
    ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
    SCREEN_CAPABILITY_KEY: process.env.SCREEN_CAPABILITY_KEY,
    SANDBOX_PROVIDER: "fake",
  }),
  { database },
);
// The proxy asks api whether a capability's subject may still watch: the bench's subject is a
// viewer of the bench's workspace (the ids bench/proxy/paths.ts mints for).
const now = new Date();
await database.db
  .insertInto("user")
  .values({
    id: "bench",
    name: "Bench",
    email: "bench@example.com",
    emailVerified: false,
    createdAt: now,
    updatedAt: now,
  })
  .execute();
await database.db
  .insertInto("organization")
  .values({ id: "bench-workspace", name: "Bench", slug: "bench", createdAt: now })
  .execute();
await database.db
  .insertInto("member")
  .values({
    id: "bench-member",
    organizationId: "bench-workspace",
    userId: "bench",
    role: "viewer",
    createdAt: now,
  })
  .execute();
console.log(`API_URL=${api.url}`);
