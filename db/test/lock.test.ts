import { type DatabaseHandle, openDatabase } from "@cubicle/db";
import { createTestDatabaseUrl, openTestDatabase } from "@cubicle/db/testing";
import { afterEach, describe, expect, it } from "vitest";

const opened: DatabaseHandle[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((handle) => handle.close()));
});

/** Two contenders for one database: two connection pools on Postgres; the one owner of a PGlite. */
async function contenders(): Promise<[DatabaseHandle, DatabaseHandle]> {
  if (process.env.CUBICLE_TEST_DB === "postgres") {
    const url = await createTestDatabaseUrl();
    const [a, b] = await Promise.all([
      openDatabase({ databaseUrl: url }),
      openDatabase({ databaseUrl: url }),
    ]);
    opened.push(a, b);
    return [a, b];
  }
  const only = await openTestDatabase();
  opened.push(only);
  return [only, only];
}

describe("ifLockFree", () => {
  it("runs the work of one contender at a time and tells the other it did not run", async () => {
    const [a, b] = await contenders();
    let release = () => {};
    const holding = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = a.ifLockFree(42, async () => {
      entered();
      await holding;
    });
    await inside;
    let secondRan = false;
    expect(
      await b.ifLockFree(42, async () => {
        secondRan = true;
      }),
    ).toBe(false);
    expect(secondRan).toBe(false);
    // another key is another lock
    expect(await b.ifLockFree(43, async () => {})).toBe(true);
    release();
    expect(await first).toBe(true);
    expect(await b.ifLockFree(42, async () => {})).toBe(true);
  });

  it("releases the lock when the work throws", async () => {
    const [a, b] = await contenders();
    await expect(
      a.ifLockFree(7, async () => {
        throw new Error("job failed");
      }),
    ).rejects.toThrow("job failed");
    expect(await b.ifLockFree(7, async () => {})).toBe(true);
  });
});
