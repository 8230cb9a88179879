import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamComputer } from "../../src/computers/lifecycle.ts";
import { machineOf } from "../../src/computers/repository.ts";
import { expectStatus, type Replicas, startReplicas, type TestApi } from "../../testing/harness.ts";
import { buildWorld } from "../../testing/world.ts";

/**
 * Two api replicas of one deployment (one Postgres database, one supervisor, the same secrets):
 * deployment-wide jobs run on one of them at a time. Postgres only: an embedded database belongs
 * to a single process, so there are no replicas to agree.
 */
const IDLE_MS = 3_000;
let supervisor: TestSupervisor;
let deployment: Replicas;
let replicas: TestApi[];

beforeAll(async () => {
  supervisor = await startTestSupervisor();
  deployment = await startReplicas(2, {
    SANDBOX_PROVIDER: "docker",
    SANDBOX_SUPERVISOR_URL: supervisor.url,
    SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
    SANDBOX_IDLE_MS: String(IDLE_MS),
  });
  ({ replicas } = deployment);
}, 120_000);

afterAll(async () => {
  await deployment?.close();
  await supervisor?.close();
});

describe("two api replicas on one database", () => {
  it("suspend an idle computer once, not twice", { timeout: 120_000 }, async () => {
    const [first, second] = replicas as [TestApi, TestApi];
    const world = await buildWorld(first, "replicas");
    const computer = await teamComputer(first.api.deps, world.workspaceId);
    // started through one replica, and seen running through the other
    expectStatus(
      await world.people.owner.post(`/v1/workspaces/${world.workspaceId}/computers/${computer.id}/start`),
      200,
    );
    const other = second.client();
    await other.signIn(world.people.owner.email);
    const seen = expectStatus(
      await other.get(`/v1/workspaces/${world.workspaceId}/computers/${computer.id}`),
      200,
    );
    expect(seen.json.state).toBe("running");

    const db = first.database.db;
    const state = async () =>
      (
        await db
          .selectFrom("computers")
          .select("state")
          .where("id", "=", computer.id)
          .executeTakeFirstOrThrow()
      ).state;
    const deadline = Date.now() + IDLE_MS + 30_000;
    while ((await state()) !== "suspended" && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await state()).toBe("suspended");
    // both replicas keep running the job for a while longer: still one suspension
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    const stops = await db
      .selectFrom("audit_events")
      .select(["action", "data", "actor_type"])
      .where("target_id", "=", computer.id)
      .where("action", "in", ["computer.stopped", "computer.stop_failed"])
      .execute();
    expect(stops).toEqual([
      { action: "computer.stopped", data: expect.objectContaining({ reason: "idle" }), actor_type: "system" },
    ]);
    const row = await db
      .selectFrom("computers")
      .selectAll()
      .where("id", "=", computer.id)
      .executeTakeFirstOrThrow();
    const { provider, ref } = await machineOf(first.api.deps, row);
    expect(await provider.status(ref)).toBe("stopped");
    await provider.destroy(ref);
  });
});
