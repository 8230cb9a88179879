import { type DatabaseHandle, migrateToLatest, migrations } from "@cubicle/db";
import { openTestDatabase } from "@cubicle/db/testing";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";

const opened: DatabaseHandle[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((handle) => handle.close()));
});

async function emptyDatabase() {
  const handle = await openTestDatabase();
  opened.push(handle);
  return handle;
}

const tables = async (handle: DatabaseHandle) =>
  (
    await sql<{ table_name: string }>`
      select table_name from information_schema.tables where table_schema = 'public' order by table_name`.execute(
      handle.db,
    )
  ).rows.map((row) => row.table_name);

describe("migrations", () => {
  it("run forward from an empty database and create the whole domain", async () => {
    const handle = await emptyDatabase();
    expect(await tables(handle)).toEqual([]);

    const result = await migrateToLatest(handle.db);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(
      Object.keys(migrations).map((name) => [name, "Success"]),
    );
    expect(await tables(handle)).toEqual(
      expect.arrayContaining([
        "user",
        "session",
        "account",
        "verification",
        "organization",
        "member",
        "invitation",
        "apikey",
        "deployment_settings",
        "bots",
        "computers",
        "checkpoints",
        "checkpoint_retries",
        "execution_leases",
        "screen_leases",
        "control_leases",
        "capability_redemptions",
        "audit_events",
        "connector_credentials",
      ]),
    );
    const settings = await handle.db.selectFrom("deployment_settings").selectAll().execute();
    expect(settings).toMatchObject([
      { id: 1, signups_open: true, computer_host: "isolated", owner_user_id: null },
    ]);
  });

  it("are idempotent: a second run changes nothing", async () => {
    const handle = await emptyDatabase();
    await migrateToLatest(handle.db);
    const before = await tables(handle);
    const again = await migrateToLatest(handle.db);
    expect(again.results).toEqual([]);
    expect(await tables(handle)).toEqual(before);
    expect(await handle.db.selectFrom("deployment_settings").selectAll().execute()).toHaveLength(1);
  });

  it("enforce the domain's invariants in the database", async () => {
    const handle = await emptyDatabase();
    await migrateToLatest(handle.db);
    const { db } = handle;
    await db
      .insertInto("organization")
      .values({ id: "w1", name: "W", slug: "w", createdAt: new Date(), logo: null, metadata: null })
      .execute();
    const bot = await db
      .insertInto("bots")
      .values({ workspace_id: "w1", name: "Scout", charter_purpose: "reads", charter_boundary: "never buys" })
      .returning(["id", "computer_mode"])
      .executeTakeFirstOrThrow();
    expect(bot.computer_mode).toBe("team");

    // One Team Computer per workspace; a bot scope must name that bot.
    await db
      .insertInto("computers")
      .values({ workspace_id: "w1", scope_key: "team:w1", home_key: "team-w1", provider_kind: "docker" })
      .execute();
    await expect(
      db
        .insertInto("computers")
        .values({ workspace_id: "w1", scope_key: "team:w1", home_key: "team-w1b", provider_kind: "docker" })
        .execute(),
    ).rejects.toThrow();
    await expect(
      db
        .insertInto("computers")
        .values({
          workspace_id: "w1",
          bot_id: bot.id,
          scope_key: "bot:other",
          home_key: bot.id,
          provider_kind: "docker",
        })
        .execute(),
    ).rejects.toThrow();
    await expect(
      db
        .insertInto("computers")
        .values({
          workspace_id: "w1",
          scope_key: "team:w1x",
          home_key: "x",
          provider_kind: "docker",
          state: "exploded" as never,
        })
        .execute(),
    ).rejects.toThrow();

    // Fences grow across lease kinds; one open execution lease per bot.
    const computer = await db
      .selectFrom("computers")
      .select("id")
      .where("scope_key", "=", "team:w1")
      .executeTakeFirstOrThrow();
    const lease = () =>
      db
        .insertInto("execution_leases")
        .values({
          workspace_id: "w1",
          computer_id: computer.id,
          bot_id: bot.id,
          holder_type: "user",
          holder_id: "u1",
          expires_at: new Date(Date.now() + 60_000),
        })
        .returning(["id", "fence"])
        .executeTakeFirstOrThrow();
    const first = await lease();
    expect(typeof first.fence).toBe("number");
    await expect(lease()).rejects.toThrow();
    await db.updateTable("execution_leases").set({ status: "ended" }).where("id", "=", first.id).execute();
    const second = await lease();
    expect(second.fence).toBeGreaterThan(first.fence);

    const screen = await db
      .insertInto("screen_leases")
      .values({
        workspace_id: "w1",
        computer_id: computer.id,
        bot_id: bot.id,
        screen_index: 0,
        expires_at: new Date(Date.now() + 60_000),
      })
      .returning("fence")
      .executeTakeFirstOrThrow();
    expect(screen.fence).toBeGreaterThan(second.fence);
    await expect(
      db
        .insertInto("screen_leases")
        .values({
          workspace_id: "w1",
          computer_id: computer.id,
          bot_id: bot.id,
          screen_index: 8,
          expires_at: new Date(),
        })
        .execute(),
    ).rejects.toThrow();
  });
});
