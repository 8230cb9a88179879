import type { DatabaseHandle } from "@cubicle/db";
import { openTestDatabase } from "@cubicle/db/testing";
import { sql } from "kysely";
import { afterEach, describe, expect, it } from "vitest";

const opened: DatabaseHandle[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((handle) => handle.close()));
});

async function database() {
  const handle = await openTestDatabase();
  opened.push(handle);
  return handle;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually(check: () => void, timeoutMs = 2_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(10);
    }
  }
}

describe("listen", () => {
  it("delivers a notification sent in a transaction only when it commits", async () => {
    const handle = await database();
    const received: string[] = [];
    const unlisten = await handle.listen("cubicle_test", (payload) => received.push(payload));

    await handle.db.transaction().execute(async (trx) => {
      await sql`select pg_notify('cubicle_test', ${"committed"})`.execute(trx);
      await sleep(100);
      expect(received).toEqual([]);
    });
    await eventually(() => expect(received).toEqual(["committed"]));

    await expect(
      handle.db.transaction().execute(async (trx) => {
        await sql`select pg_notify('cubicle_test', ${"rolled back"})`.execute(trx);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    await sql`select pg_notify('cubicle_test', ${"after"})`.execute(handle.db);
    await eventually(() => expect(received).toEqual(["committed", "after"]));

    await unlisten();
    await unlisten();
    await sql`select pg_notify('cubicle_test', ${"unheard"})`.execute(handle.db);
    await sleep(100);
    expect(received).toEqual(["committed", "after"]);
  });

  it("reaches every listener, on other connections too, and only on its channel", async () => {
    const handle = await database();
    const first: string[] = [];
    const second: string[] = [];
    const stops = [
      await handle.listen("cubicle_a", (payload) => first.push(payload)),
      await handle.listen("cubicle_a", (payload) => second.push(payload)),
      await handle.listen("cubicle_b", (payload) => first.push(`b:${payload}`)),
    ];
    // Several queries in flight at once: on Postgres they use other pool connections.
    await Promise.all(
      ["1", "2", "3"].map((n) => sql`select pg_notify('cubicle_a', ${n})`.execute(handle.db)),
    );
    await eventually(() => {
      expect([...first].sort()).toEqual(["1", "2", "3"]);
      expect([...second].sort()).toEqual(["1", "2", "3"]);
    });
    for (const stop of stops) await stop();
  });

  it("refuses channel names that are not plain identifiers", async () => {
    const handle = await database();
    await expect(handle.listen('x"; drop table y; --', () => {})).rejects.toThrow(RangeError);
    await expect(handle.listen("Upper", () => {})).rejects.toThrow(RangeError);
  });
});
