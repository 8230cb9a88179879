import { randomBytes } from "node:crypto";
import { createSupervisorClient } from "@cubicle/providers/supervisor-wire";
import type { TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { destroyMachines } from "../../testing/computers.ts";
import { expectStatus, type TestApi } from "../../testing/harness.ts";
import { createBot, type OpenedSession, SessionClient } from "../../testing/sessions.ts";
import { startApiOnTestSupervisor } from "../../testing/supervisor-process.ts";
import { until } from "../../testing/until.ts";
import { buildWorld, type World } from "../../testing/world.ts";

/**
 * Egress policies through the api on a real Docker computer: set while it runs (no restart), kept
 * through a stop and a start, and a refused connection counted and audited with its destination.
 * The destination is a documentation address (RFC 5737), never a real one: under `offline` the
 * computer's packets to it stop at the supervisor's firewall.
 */
const METRICS_TOKEN = randomBytes(32).toString("base64url");
const TARGET = { address: "192.0.2.1", port: 9, protocol: "tcp" };
const TRY_TARGET = `timeout 5 bash -c 'exec 3<>/dev/tcp/${TARGET.address}/${TARGET.port}' 2>/dev/null && echo connected || echo refused`;

let supervisor: TestSupervisor;
let t: TestApi;
let w: World;

beforeAll(async () => {
  ({ supervisor, t } = await startApiOnTestSupervisor({
    SANDBOX_EGRESS_POLL_MS: "500",
    METRICS_TOKEN,
  }));
  w = await buildWorld(t, "egress-docker");
}, 120_000);

afterAll(async () => {
  // Containers outlive the supervisor process: remove the one this file made.
  if (t) await destroyMachines(t);
  await t?.close();
  await supervisor?.close();
});

describe("a Docker computer's egress policy", () => {
  it("applies without a restart, survives a stop and a start, and its refusals reach the audit log and the metrics", {
    timeout: 300_000,
  }, async () => {
    const bot = await createBot(w.people.admin, w.workspaceId, "private");
    const sessions = new SessionClient({ client: w.people.member }, w.workspaceId);
    const policyPath = `/v1/workspaces/${w.workspaceId}/computers/${bot.computerId}/egress-policy`;
    const computerPath = `/v1/workspaces/${w.workspaceId}/computers/${bot.computerId}`;
    const row = () =>
      t.database.db
        .selectFrom("computers")
        .selectAll()
        .where("id", "=", bot.computerId)
        .executeTakeFirstOrThrow();
    const client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
    const held = async () => {
      const computer = await row();
      return (
        await client.egress(
          { homeKey: computer.home_key, computerId: computer.id, workspaceId: computer.workspace_id },
          null,
        )
      ).policy;
    };
    const tryTarget = async (session: OpenedSession) =>
      (await sessions.shell(session, { command: TRY_TARGET, timeoutMs: 20_000 })).stdout.trim();

    const session = await sessions.opened(bot.id);
    const container = (await row()).provider_ref;
    expect(await held(), "the workspace's default applied at the start").toEqual({
      level: "default",
      allow: [],
    });

    const set = expectStatus(await w.people.admin.put(policyPath, { level: "offline" }), 200).json;
    expect(set).toMatchObject({ level: "offline", inherited: false, enforced: true });
    expect(await held()).toEqual({ level: "offline", allow: [] });
    expect(await tryTarget(session)).toBe("refused");
    expect((await row()).provider_ref, "the same container: no restart").toBe(container);

    // the computer may have been refused elsewhere too (offline refuses its own DNS queries)
    const entry = await until("the refusal's audit entry", async () => {
      const entries = await t.database.db
        .selectFrom("audit_events")
        .selectAll()
        .where("action", "=", "computer.egress_refused")
        .where("target_id", "=", bot.computerId)
        .execute();
      return entries.find(
        (found) =>
          (found.data as { destination?: { address?: string } }).destination?.address === TARGET.address,
      );
    });
    expect(entry.data).toMatchObject({ destination: TARGET, count: expect.any(Number) });
    const refused = expectStatus(await w.people.viewer.get(policyPath), 200).json.refusedTotal;
    expect(refused).toBeGreaterThanOrEqual(1);
    const metrics = expectStatus(
      await t.client().get("/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }),
      200,
    ).text;
    expect(metrics).toMatch(
      new RegExp(
        `cubicle_computer_egress_refused_total\\{workspace="${w.workspaceId}",computer="${bot.computerId}"\\} [1-9]`,
      ),
    );
    expectStatus(await sessions.end(session, "success"), 200);

    expectStatus(await w.people.admin.post(`${computerPath}/stop`), 200);
    expectStatus(await w.people.member.post(`${computerPath}/start`), 200);
    expect(await held(), "kept through a stop and a start").toEqual({ level: "offline", allow: [] });
    const resumed = await sessions.opened(bot.id);
    expect(await tryTarget(resumed)).toBe("refused");
    expectStatus(await sessions.end(resumed, "success"), 200);
  });
});
