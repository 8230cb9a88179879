import { openTestDatabase } from "@cubicle/db/testing";
import { sql } from "kysely";
import { expect, it } from "vitest";

// Postgres only: PGlite has no connection that a server could cut.
it("listens again by itself after its connection is cut, and says that notifications were missed", async () => {
  const handle = await openTestDatabase();
  try {
    const received: string[] = [];
    let resubscribed = 0;
    await handle.listen(
      "cubicle_cut",
      (payload) => received.push(payload),
      () => resubscribed++,
    );
    await sql`select pg_terminate_backend(pid) from pg_stat_activity
      where query = 'listen cubicle_cut' and pid <> pg_backend_pid()`.execute(handle.db);
    await expect.poll(() => resubscribed, { timeout: 10_000 }).toBe(1);
    await sql`select pg_notify('cubicle_cut', ${"after"})`.execute(handle.db);
    await expect.poll(() => received).toEqual(["after"]);
  } finally {
    await handle.close();
  }
});
