import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Computer } from "@cubicle/db";
import { ProviderError } from "@cubicle/providers/contract";
import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AuditActor } from "../src/audit/audit-log.ts";
import { idleFor } from "../src/computers/idle-suspension.ts";
import {
  type ComputerDeps,
  computerForBot,
  destroyComputer,
  ensureRunning,
  type MachineCheckpoints,
  stopComputer,
  teamComputer,
  touchComputer,
} from "../src/computers/lifecycle.ts";
import { machineOf } from "../src/computers/repository.ts";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { buildWorld, type World } from "../testing/world.ts";

const ACTOR: AuditActor = { type: "system", id: null, label: "computers test" };
const encode = (text: string) => new TextEncoder().encode(text);
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
/** The checkpoint service's lifecycle hooks, bound, so that a test can replace one. */
const hooksOf = (checkpoints: MachineCheckpoints): MachineCheckpoints => ({
  restoreFresh: (moment) => checkpoints.restoreFresh(moment),
  afterStop: (moment) => checkpoints.afterStop(moment),
  beforeDestroy: (moment) => checkpoints.beforeDestroy(moment),
  exclusive: (computerId, task) => checkpoints.exclusive(computerId, task),
});
const charter = { purpose: "tests computers", boundary: "stays in the test" };
let seq = 0;
const unique = (prefix: string) => `${prefix} ${++seq}`;

function problem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 300)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
  return response.json;
}

/** Helpers bound to one running API. */
function on(api: () => TestApi) {
  const db = () => api().database.db;
  return {
    row: (id: string) =>
      db().selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow(),
    audits: (action: string, computerId: string) =>
      db()
        .selectFrom("audit_events")
        .selectAll()
        .where("action", "=", action)
        .where("target_id", "=", computerId)
        .orderBy("id")
        .execute(),
    async privateBot(admin: TestClient, workspaceId: string) {
      return expectStatus(
        await admin.post(`/v1/workspaces/${workspaceId}/bots`, {
          name: unique("Private"),
          charter: { ...charter, privacyReason: "its own files" },
          computerMode: "private",
        }),
        201,
      ).json as { id: string; computerId: string };
    },
  };
}

describe("with the fake provider", () => {
  let t: TestApi;
  let w: World;
  const { row, audits, privateBot } = on(() => t);
  const path = (computerId: string, rest = "", workspaceId = w.workspaceId) =>
    `/v1/workspaces/${workspaceId}/computers/${computerId}${rest}`;
  const newComputer = async () => row((await privateBot(w.people.admin, w.workspaceId)).computerId);
  const provider = () => t.api.deps.sandbox.current();

  beforeAll(async () => {
    t = await startTestApi();
    w = await buildWorld(t, "computers");
  });
  afterAll(() => t?.close());

  async function openSession(computer: Computer) {
    if (!computer.bot_id) throw new Error("a bot's computer");
    return t.database.db
      .insertInto("execution_leases")
      .values({
        workspace_id: computer.workspace_id,
        computer_id: computer.id,
        bot_id: computer.bot_id,
        holder_type: "user",
        holder_id: w.people.member.userId,
        expires_at: new Date(Date.now() + 60_000),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  describe("the lifecycle service", () => {
    it("makes one Team Computer per workspace, however many ask at once", async () => {
      const workspace = expectStatus(await w.people.owner.post("/v1/workspaces", { name: "Race" }), 201).json;
      const made = await Promise.all(Array.from({ length: 5 }, () => teamComputer(t.api.deps, workspace.id)));
      expect(new Set(made.map((computer) => computer.id)).size).toBe(1);
      expect(made[0]).toMatchObject({
        workspace_id: workspace.id,
        bot_id: null,
        scope_key: `team:${workspace.id}`,
        home_key: `team-${workspace.id}`,
        provider_kind: "fake",
        provider_ref: null,
        state: "stopped",
      });
      const id = made[0]?.id ?? "";
      expect(await audits("computer.created", id)).toEqual([
        expect.objectContaining({
          actor_type: "system",
          data: { scope: `team:${workspace.id}`, state: "stopped" },
        }),
      ]);
    });

    it("provisions once when five callers ensure it runs at the same moment", async () => {
      const workspace = expectStatus(await w.people.owner.post("/v1/workspaces", { name: "Rush" }), 201).json;
      const computer = await teamComputer(t.api.deps, workspace.id);
      const provision = vi.spyOn(await provider(), "provision");
      try {
        const results = await Promise.all(
          Array.from({ length: 5 }, () => ensureRunning(t.api.deps, computer, ACTOR)),
        );
        expect(provision).toHaveBeenCalledTimes(1);
        const refs = new Set(results.map((r) => r.machine.ref.providerRef));
        expect(refs.size).toBe(1);
        for (const result of results) expect(result.computer.state).toBe("running");
      } finally {
        provision.mockRestore();
      }
      const started = await audits("computer.started", computer.id);
      expect(started).toHaveLength(1);
      expect(started[0]?.data).toEqual({
        fresh: true,
        providerKind: "fake",
        from: "stopped",
        state: "running",
      });
    });

    it("provisions once across api replicas, guarded by the database", async () => {
      const computer = await newComputer();
      const real = await provider();
      const original = real.provision;
      // Slow enough that every caller arrives while the first one provisions.
      const provision = vi.spyOn(real, "provision").mockImplementation(async (ref) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return original(ref);
      });
      // Another instance's deps: its own in-process lock (keyed by its Sandbox), the same provider.
      const replica: ComputerDeps = { ...t.api.deps, sandbox: Object.create(t.api.deps.sandbox) };
      try {
        const calls = await Promise.all([
          ensureRunning(t.api.deps, computer, ACTOR),
          ensureRunning(replica, computer, ACTOR),
          ensureRunning(replica, computer, ACTOR),
        ]);
        expect(provision).toHaveBeenCalledTimes(1);
        expect(new Set(calls.map((c) => c.machine.ref.providerRef)).size).toBe(1);
      } finally {
        provision.mockRestore();
      }
      expect(await audits("computer.started", computer.id)).toHaveLength(1);
    });

    it("takes over a transition whose replica died", async () => {
      const computer = await newComputer();
      await t.database.db
        .updateTable("computers")
        .set({ state: "booting", updated_at: new Date(Date.now() - 10 * 60_000) })
        .where("id", "=", computer.id)
        .execute();
      const { computer: started } = await ensureRunning(t.api.deps, computer, ACTOR);
      expect(started.state).toBe("running");
      expect((await audits("computer.started", computer.id))[0]?.data).toMatchObject({ from: "booting" });
    });

    it("restores a new machine only, before anyone sees it running; a failed restore fails the start", async () => {
      const computer = await newComputer();
      const states: string[] = [];
      const restoreFresh = vi.fn(async ({ computer: c }: { computer: Computer }) => {
        states.push((await row(c.id)).state);
      });
      const deps: ComputerDeps = {
        ...t.api.deps,
        checkpoints: { ...hooksOf(t.api.deps.checkpoints), restoreFresh },
      };
      const first = await ensureRunning(deps, computer, ACTOR);
      expect(restoreFresh).toHaveBeenCalledTimes(1);
      expect(restoreFresh.mock.calls[0]?.[0]).toMatchObject({
        computer: { id: computer.id },
        machine: { ref: { providerRef: first.machine.ref.providerRef, homeKey: computer.home_key } },
        actor: ACTOR,
      });
      expect(states).toEqual(["booting"]);
      await stopComputer(deps, first.computer, ACTOR, "idle");
      await ensureRunning(deps, first.computer, ACTOR);
      expect(restoreFresh).toHaveBeenCalledTimes(1);

      const failing: ComputerDeps = {
        ...t.api.deps,
        checkpoints: {
          ...hooksOf(t.api.deps.checkpoints),
          restoreFresh: async () => {
            throw new Error("restore failed");
          },
        },
      };
      const other = await newComputer();
      await expect(ensureRunning(failing, other, ACTOR)).rejects.toThrow("restore failed");
      expect(await row(other.id)).toMatchObject({ state: "error", state_detail: "restore failed" });
    });

    it("suspends for idleness, stops when asked, and touches activity", async () => {
      const { computer } = await ensureRunning(t.api.deps, await newComputer(), ACTOR);
      const suspended = await stopComputer(t.api.deps, computer, ACTOR, "idle");
      expect(suspended.state).toBe("suspended");
      const { provider: p, ref } = await machineOf(t.api.deps, suspended);
      expect(await p.status(ref)).toBe("stopped");
      expect((await audits("computer.stopped", computer.id)).map((a) => a.data)).toEqual([
        { reason: "idle", providerKind: "fake", from: "running", state: "suspended" },
      ]);
      await t.database.db
        .updateTable("computers")
        .set({ last_activity_at: new Date(Date.now() - 3_600_000) })
        .where("id", "=", computer.id)
        .execute();
      await touchComputer(t.api.deps, computer.id);
      const touched = (await row(computer.id)).last_activity_at;
      expect(Date.now() - (touched?.getTime() ?? 0)).toBeLessThan(60_000);
    });

    it("does not suspend a computer that was used after it was found idle", async () => {
      const { computer } = await ensureRunning(t.api.deps, await newComputer(), ACTOR);
      // idle after 30 s here, while the api's own idle job (10 minutes) leaves it alone
      const idle = idleFor(30);
      await t.database.db
        .updateTable("computers")
        .set({ last_activity_at: new Date(Date.now() - 60_000) })
        .where("id", "=", computer.id)
        .execute();
      // found idle, then used before the suspension claims it
      const found = await row(computer.id);
      await touchComputer(t.api.deps, computer.id);
      const kept = await stopComputer(t.api.deps, found, ACTOR, "idle", { onlyIf: idle });
      expect(kept.state).toBe("running");
      expect(await audits("computer.stopped", computer.id)).toEqual([]);
      // and once it is idle again, the same call suspends it
      await t.database.db
        .updateTable("computers")
        .set({ last_activity_at: new Date(Date.now() - 60_000) })
        .where("id", "=", computer.id)
        .execute();
      const suspended = await stopComputer(t.api.deps, await row(computer.id), ACTOR, "idle", {
        onlyIf: idle,
      });
      expect(suspended.state).toBe("suspended");
    });

    it("gives a bot the computer of its mode", async () => {
      const bot = await privateBot(w.people.admin, w.workspaceId);
      const record = await t.database.db
        .selectFrom("bots")
        .selectAll()
        .where("id", "=", bot.id)
        .executeTakeFirstOrThrow();
      expect((await computerForBot(t.api.deps, record)).id).toBe(bot.computerId);
      const team = await computerForBot(t.api.deps, { ...record, computer_mode: "team" });
      expect(team.scope_key).toBe(`team:${w.workspaceId}`);
    });
  });

  describe("the routes", () => {
    it("list and show computers: scope, state, providers, activity", async () => {
      const bot = await privateBot(w.people.admin, w.workspaceId);
      const list = expectStatus(
        await w.people.viewer.get(`/v1/workspaces/${w.workspaceId}/computers`),
        200,
      ).json;
      expect(list.items[0]).toMatchObject({ scope: "team", bot: null, homeKey: `team-${w.workspaceId}` });
      const listed = list.items.find((c: { id: string }) => c.id === bot.computerId);
      expect(listed).toEqual({
        id: bot.computerId,
        workspaceId: w.workspaceId,
        scope: "bot",
        bot: { id: bot.id, name: expect.any(String), archived: false },
        homeKey: bot.id,
        state: "stopped",
        stateDetail: null,
        providerKind: "fake",
        effectiveProvider: "fake",
        movesOnNextStart: false,
        computersDisabled: false,
        lastActivityAt: null,
        egress: { level: "default", allow: [], inherited: true },
        sessions: [],
        screens: [],
        control: [],
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      });
      expect(expectStatus(await w.people.viewer.get(path(bot.computerId)), 200).json).toEqual(listed);
    });

    it("start, stop, start again, destroy and start fresh, each audited; the home stays", async () => {
      const { computerId } = await privateBot(w.people.admin, w.workspaceId);
      const started = expectStatus(await w.people.member.post(path(computerId, "/start")), 200).json;
      expect(started).toMatchObject({
        state: "running",
        providerKind: "fake",
        lastActivityAt: expect.any(String),
      });
      const firstRef = (await row(computerId)).provider_ref;
      expect(firstRef).not.toBeNull();
      // Starting a running computer only counts as activity.
      const again = expectStatus(await w.people.member.post(path(computerId, "/start")), 200).json;
      expect(new Date(again.lastActivityAt).getTime()).toBeGreaterThanOrEqual(
        new Date(started.lastActivityAt).getTime(),
      );
      expect(await audits("computer.started", computerId)).toHaveLength(1);

      const machine = await machineOf(t.api.deps, await row(computerId));
      await machine.provider.writeFile(machine.ref, "work/kept.txt", encode("still here"));

      const stopped = expectStatus(await w.people.admin.post(path(computerId, "/stop")), 200).json;
      expect(stopped.state).toBe("stopped");
      expect(await machine.provider.status(machine.ref)).toBe("stopped");
      expectStatus(await w.people.admin.post(path(computerId, "/stop")), 200);
      expect(await audits("computer.stopped", computerId)).toHaveLength(1);

      expectStatus(await w.people.member.post(path(computerId, "/start")), 200);
      expect((await row(computerId)).provider_ref).toBe(firstRef);

      const destroyed = expectStatus(await w.people.owner.post(path(computerId, "/destroy")), 200).json;
      expect(destroyed.state).toBe("stopped");
      expect(await row(computerId)).toMatchObject({ provider_ref: null, state: "stopped" });
      expect(await machine.provider.status(machine.ref)).toBe("missing");
      expectStatus(await w.people.owner.post(path(computerId, "/destroy")), 200);

      expectStatus(await w.people.member.post(path(computerId, "/start")), 200);
      const fresh = await row(computerId);
      expect(fresh.provider_ref).not.toBe(firstRef);
      const now = await machineOf(t.api.deps, fresh);
      expect(decode(await now.provider.readFile(now.ref, "work/kept.txt", { maxBytes: 100 }))).toBe(
        "still here",
      );

      const trail = await t.database.db
        .selectFrom("audit_events")
        .select(["action", "actor_id", "data"])
        .where("target_id", "=", computerId)
        .where("action", "like", "computer.%")
        .orderBy("id")
        .execute();
      expect(trail).toEqual([
        {
          action: "computer.created",
          actor_id: null,
          data: { scope: `bot:${fresh.bot_id}`, state: "stopped" },
        },
        {
          action: "computer.started",
          actor_id: w.people.member.userId,
          data: { fresh: true, providerKind: "fake", from: "stopped", state: "running" },
        },
        {
          action: "computer.stopped",
          actor_id: w.people.admin.userId,
          data: { reason: "manual", providerKind: "fake", from: "running", state: "stopped" },
        },
        {
          action: "computer.started",
          actor_id: w.people.member.userId,
          data: { fresh: false, providerKind: "fake", from: "stopped", state: "running" },
        },
        {
          action: "computer.destroyed",
          actor_id: w.people.owner.userId,
          data: { providerKind: "fake", providerRef: firstRef, from: "running", state: "stopped" },
        },
        {
          action: "computer.started",
          actor_id: w.people.member.userId,
          data: { fresh: true, providerKind: "fake", from: "stopped", state: "running" },
        },
      ]);
    });

    it("refuse to stop or destroy a computer with open sessions, and show who uses it", async () => {
      const computer = await newComputer();
      expectStatus(await w.people.member.post(path(computer.id, "/start")), 200);
      const session = await openSession(computer);
      await t.database.db
        .insertInto("screen_leases")
        .values({
          workspace_id: computer.workspace_id,
          computer_id: computer.id,
          bot_id: computer.bot_id ?? "",
          execution_lease_id: session.id,
          screen_index: 0,
          expires_at: new Date(Date.now() + 60_000),
        })
        .execute();
      const control = expectStatus(
        await w.people.member.post(path(computer.id, "/screens/2/control")),
        201,
      ).json;

      const shown = expectStatus(await w.people.viewer.get(path(computer.id)), 200).json;
      expect(shown.sessions).toEqual([
        {
          id: session.id,
          fence: session.fence,
          bot: { id: computer.bot_id, name: expect.any(String) },
          expiresAt: expect.any(String),
        },
      ]);
      expect(shown.screens).toEqual([
        { index: 0, bot: { id: computer.bot_id, name: expect.any(String) }, sessionId: session.id },
      ]);
      expect(shown.control).toEqual([
        {
          index: 2,
          leaseId: control.leaseId,
          holder: { type: "user", id: w.people.member.userId, name: expect.any(String) },
          expiresAt: control.expiresAt,
        },
      ]);

      const busy = problem(await w.people.admin.post(path(computer.id, "/stop")), 409, "COMPUTER_BUSY");
      expect(busy.detail).toContain(session.id);
      problem(await w.people.admin.post(path(computer.id, "/destroy")), 409, "COMPUTER_BUSY");
      expect(await row(computer.id)).toMatchObject({ state: "running" });
      expect(await audits("computer.stopped", computer.id)).toHaveLength(0);

      await t.database.db
        .updateTable("execution_leases")
        .set({ status: "ended", outcome: "success", ended_at: new Date() })
        .where("id", "=", session.id)
        .execute();
      await t.database.db
        .updateTable("screen_leases")
        .set({ released_at: new Date() })
        .where("execution_lease_id", "=", session.id)
        .execute();
      expectStatus(await w.people.admin.post(path(computer.id, "/stop")), 200);
    });

    it("answer provider failures as problems and leave the computer in error until a start works", async () => {
      const computer = await newComputer();
      const provision = vi
        .spyOn(await provider(), "provision")
        .mockRejectedValueOnce(new ProviderError("PROVIDER_FAILURE", "the machine did not come up"));
      try {
        const failed = problem(
          await w.people.member.post(path(computer.id, "/start")),
          502,
          "PROVIDER_FAILURE",
        );
        expect(failed.detail).toBe("the machine did not come up");
        const shown = expectStatus(await w.people.viewer.get(path(computer.id)), 200).json;
        expect(shown).toMatchObject({ state: "error", stateDetail: "the machine did not come up" });
        expect((await audits("computer.start_failed", computer.id)).map((a) => [a.actor_id, a.data])).toEqual(
          [[w.people.member.userId, { providerKind: "fake", code: "PROVIDER_FAILURE", state: "error" }]],
        );
        expect(expectStatus(await w.people.member.post(path(computer.id, "/start")), 200).json).toMatchObject(
          {
            state: "running",
            stateDetail: null,
          },
        );
      } finally {
        provision.mockRestore();
      }
    });

    it("move a computer made by another provider to the one in effect", async () => {
      const computer = await newComputer();
      expectStatus(await w.people.member.post(path(computer.id, "/start")), 200);
      await t.database.db
        .updateTable("computers")
        .set({ provider_kind: "none" })
        .where("id", "=", computer.id)
        .execute();
      expect(expectStatus(await w.people.viewer.get(path(computer.id)), 200).json).toMatchObject({
        providerKind: "none",
        effectiveProvider: "fake",
        movesOnNextStart: true,
        computersDisabled: false,
      });
      expectStatus(await w.people.member.post(path(computer.id, "/start")), 200);
      expect(await row(computer.id)).toMatchObject({ provider_kind: "fake", state: "running" });
      expect((await audits("computer.started", computer.id)).at(-1)?.data).toMatchObject({ fresh: true });
    });

    it("answer another workspace's computer exactly like a missing one", async () => {
      const computer = await newComputer();
      const theirs = problem(
        await w.people.outsider.get(path(computer.id, "", w.otherWorkspaceId)),
        404,
        "COMPUTER_NOT_FOUND",
      );
      const missing = problem(
        await w.people.outsider.get(path("no-such-computer", "", w.otherWorkspaceId)),
        404,
        "COMPUTER_NOT_FOUND",
      );
      expect(theirs.detail).toBe(missing.detail);
      problem(
        await w.people.outsider.post(path(computer.id, "/start", w.otherWorkspaceId)),
        404,
        "COMPUTER_NOT_FOUND",
      );
      problem(await w.people.outsider.post(path(computer.id, "/start")), 404, "WORKSPACE_NOT_FOUND");
      expect((await row(computer.id)).state).toBe("stopped");
    });
  });
});

describe("with the real Docker provider", () => {
  let supervisor: TestSupervisor;
  let d: TestApi;
  let owner: TestClient;
  let workspaceId: string;
  const { row, audits, privateBot } = on(() => d);
  const path = (computerId: string, rest = "") =>
    `/v1/workspaces/${workspaceId}/computers/${computerId}${rest}`;

  beforeAll(async () => {
    supervisor = await startTestSupervisor();
    d = await startTestApi({
      SANDBOX_PROVIDER: "docker",
      SANDBOX_SUPERVISOR_URL: supervisor.url,
      SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
    });
    owner = d.client();
    expectStatus(await owner.signUp("owner-docker-computers@example.com"), 200);
    workspaceId = expectStatus(await owner.post("/v1/workspaces", { name: "Docker computers" }), 201).json.id;
  });
  afterAll(async () => {
    if (d) {
      const computers = await d.database.db.selectFrom("computers").selectAll().execute();
      for (const computer of computers)
        await destroyComputer(d.api.deps, computer, ACTOR).catch(() => undefined);
      await d.close();
    }
    await supervisor?.close();
  });

  it("keeps a Private bot's files through Private → Team → Private, a destroyed machine and a stop", {
    timeout: 240_000,
  }, async () => {
    const bot = await privateBot(owner, workspaceId);
    const started = expectStatus(await owner.post(path(bot.computerId, "/start")), 200).json;
    expect(started).toMatchObject({ state: "running", providerKind: "docker", effectiveProvider: "docker" });
    const first = await machineOf(d.api.deps, await row(bot.computerId));
    await first.provider.writeFile(first.ref, "private/notes.txt", encode("only mine"));

    const mode = (computerMode: string) =>
      owner.post(`/v1/workspaces/${workspaceId}/bots/${bot.id}/mode`, { computerMode });
    expect(expectStatus(await mode("team"), 200).json.computerId).not.toBe(bot.computerId);

    // Its machine goes away; its home does not.
    expectStatus(await owner.post(path(bot.computerId, "/destroy")), 200);
    expect(await first.provider.status(first.ref)).toBe("missing");
    const onDisk = join(supervisor.dataDir, "homes", bot.id, "private", "notes.txt");
    expect(existsSync(onDisk)).toBe(true);
    expect(readFileSync(onDisk, "utf8")).toBe("only mine");

    expect(expectStatus(await mode("private"), 200).json.computerId).toBe(bot.computerId);
    expectStatus(await owner.post(path(bot.computerId, "/start")), 200);
    const second = await machineOf(d.api.deps, await row(bot.computerId));
    expect(second.ref.providerRef).not.toBe(first.ref.providerRef);
    expect(decode(await second.provider.readFile(second.ref, "private/notes.txt", { maxBytes: 1_000 }))).toBe(
      "only mine",
    );

    // Stop keeps the container; the next start resumes it.
    expect(expectStatus(await owner.post(path(bot.computerId, "/stop")), 200).json.state).toBe("stopped");
    expect(await second.provider.status(second.ref)).toBe("stopped");
    expectStatus(await owner.post(path(bot.computerId, "/start")), 200);
    expect((await row(bot.computerId)).provider_ref).toBe(second.ref.providerRef);
    expect(await second.provider.status(second.ref)).toBe("running");
    expect(decode(await second.provider.readFile(second.ref, "private/notes.txt", { maxBytes: 1_000 }))).toBe(
      "only mine",
    );

    expect((await audits("computer.started", bot.computerId)).map((a) => a.data.fresh)).toEqual([
      true,
      true,
      false,
    ]);
    expect((await audits("computer.destroyed", bot.computerId)).map((a) => a.data.providerKind)).toEqual([
      "docker",
    ]);
  });
});
