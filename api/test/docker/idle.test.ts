import type { TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { machineOf } from "../../src/computers/repository.ts";
import { expectStatus, type TestApi } from "../../testing/harness.ts";
import { createBot, SessionClient } from "../../testing/sessions.ts";
import { startApiOnTestSupervisor } from "../../testing/supervisor-process.ts";
import { buildWorld } from "../../testing/world.ts";

/**
 * Idle suspension on a real Docker computer: nobody uses it for SANDBOX_IDLE_MS, so its container
 * is stopped; the next session resumes it, home intact.
 */
const IDLE_MS = 30_000;
let supervisor: TestSupervisor;
let t: TestApi;

beforeAll(async () => {
  ({ supervisor, t } = await startApiOnTestSupervisor({
    SANDBOX_IDLE_MS: String(IDLE_MS),
  }));
}, 120_000);

afterAll(async () => {
  await t?.close();
  await supervisor?.close();
});

describe("an idle computer", () => {
  it("is suspended after SANDBOX_IDLE_MS and resumed, files intact, by the next session", {
    timeout: 180_000,
  }, async () => {
    const world = await buildWorld(t, "idle");
    const bot = await createBot(world.people.admin, world.workspaceId);
    const sessions = new SessionClient({ client: world.people.member }, world.workspaceId);

    const first = await sessions.opened(bot.id);
    expectStatus(await sessions.write(first, "proof.txt", "still here after a nap\n"), 204);
    expectStatus(await sessions.end(first, "success"), 200);
    const db = t.database.db;
    const computer = () =>
      db.selectFrom("computers").selectAll().where("id", "=", bot.computerId).executeTakeFirstOrThrow();
    const lastUse = Date.now();

    const deadline = lastUse + IDLE_MS + 30_000;
    while ((await computer()).state !== "suspended" && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 500));
    const suspended = await computer();
    expect(suspended.state).toBe("suspended");
    // not before its time: nothing touched it for the whole idle period
    expect(Date.now() - lastUse).toBeGreaterThanOrEqual(IDLE_MS);
    const { provider, ref } = await machineOf(t.api.deps, suspended);
    expect(await provider.status(ref)).toBe("stopped");
    const audit = await db
      .selectFrom("audit_events")
      .select(["data", "actor_type"])
      .where("target_id", "=", bot.computerId)
      .where("action", "=", "computer.stopped")
      .execute();
    expect(audit).toEqual([{ data: expect.objectContaining({ reason: "idle" }), actor_type: "system" }]);

    const second = await sessions.opened(bot.id);
    expect(second.fence).toBeGreaterThan(first.fence);
    expect((await computer()).state).toBe("running");
    expect((await computer()).provider_ref).toBe(suspended.provider_ref);
    const read = expectStatus(await sessions.read(second, "proof.txt"), 200);
    expect(read.text).toBe("still here after a nap\n");
    expectStatus(await sessions.end(second, "success"), 200);
    await provider.destroy(ref);
  });
});
