import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SYSTEM_ACTOR } from "../src/audit/audit-log.ts";
import { destroyComputer, ensureRunning, stopComputer } from "../src/computers/lifecycle.ts";
import { type CheckpointView, checkpointsOn } from "../testing/checkpoints.ts";
import { deploymentSecrets, expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { filesOf } from "../testing/homes.ts";
import { createBot, problem } from "../testing/sessions.ts";
import { until } from "../testing/until.ts";
import { buildWorld, type World } from "../testing/world.ts";

const sha = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

/** An api on the fake provider with a world on it, for the tests of one describe block. */
function withWorld(tag: string, env: Record<string, string> = {}) {
  let t: TestApi;
  let w: World;
  beforeAll(async () => {
    t = await startTestApi(env);
    w = await buildWorld(t, tag);
  });
  afterAll(() => t?.close());
  const api = () => t;
  const world = () => w;
  return { api, world, c: checkpointsOn(api, world) };
}

describe("checkpoints", () => {
  const { c, api, world } = withWorld("checkpoints");

  it("keeps revisions R1, R2, R3; restoring R1 brings back exactly R1's files, and R2 and R3 stay", async () => {
    const s = await c.privateSession();
    const bytes = randomBytes(200_000);
    await c.write(s, { "notes.txt": "first", "data/blob.bin": bytes, "keep.txt": "unchanged" });
    const r1 = await c.take(s.computerId);
    await c.write(s, { "notes.txt": "second", "new.txt": "added in R2" });
    await c.remove(s, "data/blob.bin");
    const r2 = await c.take(s.computerId);
    await c.write(s, { "notes.txt": "third", "data/other.bin": randomBytes(1000) });
    const r3 = await c.take(s.computerId);

    expect([r1.reason, r2.reason, r3.reason]).toEqual(["manual", "manual", "manual"]);
    expect(r2.parentId).toBe(r1.id);
    expect(r3.parentId).toBe(r2.id);
    expect(r1.newBytes).toBeGreaterThanOrEqual(bytes.length);
    // R2 only added its two small files: the rest was stored once already.
    expect(r2.newBytes).toBe("second".length + "added in R2".length);
    const r1Tree = await c.download(s.computerId, r1.id);
    expect(filesOf(r1Tree)).toMatchObject({
      "notes.txt": sha("first"),
      "data/blob.bin": sha(bytes),
      "keep.txt": sha("unchanged"),
    });

    await c.end(s);
    // the session's end is checkpointed too (in the background)
    await until("the session-end checkpoint", async () =>
      (await c.list(s.computerId)).find((r) => r.reason === "session-success"),
    );
    await c.restore(s.computerId, r1.id, "current");

    expect(await c.home(s.computerId)).toEqual(r1Tree);
    const after = await c.list(s.computerId);
    expect(after.map((r) => r.id)).toEqual(expect.arrayContaining([r1.id, r2.id, r3.id]));
    // the home as it was before the restore is kept, and it is R3 plus nothing (same files)
    const before = after.find((r) => r.reason === "before-restore");
    expect(before?.sha256).toBe(r3.sha256);
    const [restored] = await c.audits(s.computerId, "checkpoint.restored");
    expect(restored?.data).toEqual({ checkpointId: r1.id, into: "current", beforeRestoreId: before?.id });

    // …and R3 comes back just as exactly
    await c.restore(s.computerId, r3.id, "current");
    expect(await c.home(s.computerId)).toEqual(await c.download(s.computerId, r3.id));
  });

  it("restores into a fresh machine: the old one is removed, the new one holds the revision", async () => {
    const s = await c.privateSession();
    await c.write(s, { "a.txt": "one" });
    const r1 = await c.take(s.computerId);
    await c.write(s, { "a.txt": "two" });
    await c.end(s);
    const oldRef = (await c.computerRow(s.computerId)).provider_ref;

    const result = await c.restore(s.computerId, r1.id, "fresh");
    expect(result).toEqual({ computerId: s.computerId, state: "running" });
    const row = await c.computerRow(s.computerId);
    expect(row.provider_ref).not.toBe(oldRef);
    expect(filesOf(await c.home(s.computerId))).toEqual({ "a.txt": sha("one") });
    // "two" was kept before the restore
    const kept = (await c.list(s.computerId)).filter((r) => r.reason === "before-restore");
    expect(kept).toHaveLength(1);
    expect(filesOf(await c.download(s.computerId, kept[0]?.id ?? ""))).toEqual({ "a.txt": sha("two") });
  });

  it("checkpoints when a session ends (success, failure, expiry), on stop, before idle suspension and before destroy", async () => {
    const s1 = await c.privateSession();
    const computerId = s1.computerId;
    await c.write(s1, { "work.txt": "by session 1" });
    await c.end(s1, "failure");
    await until("a session-failure checkpoint", async () =>
      (await c.list(computerId)).find((r) => r.reason === "session-failure"),
    );

    const s2 = await c.sessions().opened(s1.botId);
    // it stops heartbeating and expires: an expired session counts as a failure
    await api()
      .database.db.updateTable("execution_leases")
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where("id", "=", s2.sessionId)
      .execute();
    await until("the expiry's checkpoint", async () => {
      const failures = (await c.list(computerId)).filter((r) => r.reason === "session-failure");
      return failures.length === 2 ? failures : undefined;
    });

    const deps = api().api.deps;
    await stopComputer(deps, await c.computerRow(computerId), SYSTEM_ACTOR, "manual");
    await ensureRunning(deps, await c.computerRow(computerId), SYSTEM_ACTOR);
    await stopComputer(deps, await c.computerRow(computerId), SYSTEM_ACTOR, "idle");
    await destroyComputer(deps, await c.computerRow(computerId), SYSTEM_ACTOR);
    const reasons = (await c.list(computerId)).map((r) => r.reason);
    expect(reasons.slice(0, 3)).toEqual(["stop", "idle", "stop"]);
    for (const revision of await c.list(computerId))
      expect(filesOf(await c.download(computerId, revision.id))).toEqual({ "work.txt": sha("by session 1") });
    // every one audited, by whoever caused it
    const created = await c.audits(computerId, "checkpoint.created");
    expect(created.map((a) => a.data.reason)).toEqual([
      "session-failure",
      "session-failure",
      "stop",
      "idle",
      "stop",
    ]);
  });

  it("never fails a session for its checkpoint: the failure is audited, shown and retried until it succeeds", async () => {
    const s = await c.privateSession();
    await c.write(s, { "result.txt": "done" });
    const provider = await api().api.deps.sandbox.current();
    const exportHome = vi
      .spyOn(provider, "exportHome")
      .mockRejectedValueOnce(new Error("the machine's disk went away for a moment"));
    try {
      await c.end(s, "success");
      const failed = await until(
        "the failure's audit",
        async () => (await c.audits(s.computerId, "checkpoint.failed"))[0],
      );
      expect(failed.data).toMatchObject({
        reason: "session-success",
        error: "the machine's disk went away for a moment",
      });
      expect(
        (
          await api()
            .database.db.selectFrom("execution_leases")
            .select("outcome")
            .where("id", "=", s.sessionId)
            .executeTakeFirstOrThrow()
        ).outcome,
      ).toBe("success");
      const listed = expectStatus(await c.owner().get(c.checkpoints(s.computerId)), 200).json;
      expect(listed.items).toEqual([]);
      expect(listed.retry).toMatchObject({
        reason: "session-success",
        attempts: 1,
        lastError: "the machine's disk went away for a moment",
      });
    } finally {
      exportHome.mockRestore();
    }
    // the retry job picks it up once it is due
    await api()
      .database.db.updateTable("checkpoint_retries")
      .set({ next_attempt_at: new Date(Date.now() - 1000) })
      .where("computer_id", "=", s.computerId)
      .execute();
    const retried = await until(
      "the retried checkpoint",
      async () => (await c.list(s.computerId))[0],
      20_000,
    );
    expect(retried.reason).toBe("session-success");
    expect(filesOf(await c.download(s.computerId, retried.id))).toEqual({ "result.txt": sha("done") });
    expect(expectStatus(await c.owner().get(c.checkpoints(s.computerId)), 200).json.retry).toBeNull();
  });

  it("answers bad requests with problems and changes nothing", async () => {
    const s = await c.privateSession();
    const r1 = await c.take(s.computerId);
    const base = c.checkpoints(s.computerId);
    // a restore under a running session
    problem(await c.owner().post(`${base}/${r1.id}/restore`, { into: "current" }), 409, "COMPUTER_BUSY");
    await c.end(s);
    problem(await c.owner().post(`${base}/${r1.id}/restore`, { into: "sideways" }), 400, "VALIDATION_FAILED");
    problem(await c.owner().post(`${base}/${r1.id}/restore`, {}), 400, "VALIDATION_FAILED");
    problem(
      await c.owner().post(`${base}/20990101T000000000Z-00000000/restore`, { into: "current" }),
      404,
      "NOT_FOUND",
    );
    problem(await c.owner().get(`${base}/nope/archive`), 404, "NOT_FOUND");
    problem(await c.owner().get(`${base}/nope`), 404, "NOT_FOUND");
    expect(expectStatus(await c.owner().get(`${base}/${r1.id}`), 200).json).toMatchObject({
      id: r1.id,
      sha256: r1.sha256,
    });
    // another computer's checkpoint id through this computer
    const other = await c.privateSession();
    const foreign = await c.take(other.computerId);
    problem(await c.owner().get(`${base}/${foreign.id}/archive`), 404, "NOT_FOUND");
    // a computer that never ran has nothing to checkpoint
    const idle = await createBot(c.owner(), world().workspaceId, "private");
    problem(await c.owner().post(c.checkpoints(idle.computerId)), 409, "NO_MACHINE");
    expect(await c.audits(s.computerId, "checkpoint.restored")).toEqual([]);
  });
});

describe("a checkpoint altered on disk", () => {
  const { c, api } = withWorld("tampered");

  it("is refused on restore with a clear problem, and the home stays as it was", async () => {
    const s = await c.privateSession();
    await c.write(s, { "notes.txt": "as checkpointed", "data.bin": randomBytes(100_000) });
    const r1 = await c.take(s.computerId);
    await c.write(s, { "notes.txt": "the home now" });
    await c.end(s);
    await until("the session-end checkpoint", async () =>
      (await c.list(s.computerId)).find((r) => r.reason === "session-success"),
    );
    const home = await c.home(s.computerId);
    // one byte of every stored object changes, as a disk or an intruder might change it
    const objects = join(api().api.deps.env.checkpoints.dir, "objects");
    for (const entry of readdirSync(objects, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const path = join(entry.parentPath, entry.name);
      const bytes = readFileSync(path);
      bytes[bytes.length - 1] = (bytes.at(-1) ?? 0) ^ 1;
      writeFileSync(path, bytes);
    }

    const refused = await c
      .owner()
      .post(`${c.checkpoints(s.computerId)}/${r1.id}/restore`, { into: "current" });
    const body = problem(refused, 500, "CHECKPOINT_UNREADABLE");
    expect(body.detail).toMatch(/failed authentication: it was altered, truncated or swapped on disk/);
    expect(await c.home(s.computerId)).toEqual(home);
    expect(await c.audits(s.computerId, "checkpoint.restored")).toEqual([]);
  });
});

describe("checkpoint retention", () => {
  const { c } = withWorld("retention", { CHECKPOINT_KEEP_LAST: "3", CHECKPOINT_KEEP_DAILY_DAYS: "0" });

  it("keeps the newest CHECKPOINT_KEEP_LAST, and what it keeps restores whole", async () => {
    const s = await c.privateSession();
    const taken: CheckpointView[] = [];
    for (let i = 1; i <= 5; i += 1) {
      await c.write(s, { [`file-${i}.txt`]: `content ${i}`, "big.bin": randomBytes(50_000 + i) });
      taken.push(await c.take(s.computerId));
    }
    const kept = await c.list(s.computerId);
    expect(kept.map((r) => r.id)).toEqual([taken[4]?.id, taken[3]?.id, taken[2]?.id]);
    const pruned = (await c.audits(s.computerId, "checkpoint.pruned")).flatMap((a) => a.data.checkpointIds);
    expect(pruned).toEqual([taken[0]?.id, taken[1]?.id]);
    problem(await c.owner().get(`${c.checkpoints(s.computerId)}/${taken[0]?.id}/archive`), 404, "NOT_FOUND");
    // the oldest kept revision's content survived the pruning of its parents
    const oldest = await c.download(s.computerId, taken[2]?.id ?? "");
    expect(Object.keys(filesOf(oldest)).sort()).toEqual([
      "big.bin",
      "file-1.txt",
      "file-2.txt",
      "file-3.txt",
    ]);
    await c.end(s);
  });
});

describe("a provider change", () => {
  let fake: TestApi;
  let desktop: TestApi | undefined;
  let w: World;
  const shared = mkdtempSync(join(tmpdir(), "cubicle-checkpoint-move-"));
  const secrets = {
    ...deploymentSecrets(),
    CHECKPOINT_DIR: shared,
  };
  beforeAll(async () => {
    fake = await startTestApi({ ...secrets, SANDBOX_PROVIDER: "fake" });
    w = await buildWorld(fake, "move");
  });
  afterAll(async () => {
    await desktop?.close();
    await fake?.close();
    rmSync(shared, { recursive: true, force: true });
  });

  it("gives the computer a fresh machine on the new provider, restored from the latest checkpoint", async () => {
    const c = checkpointsOn(
      () => fake,
      () => w,
    );
    const s = await c.privateSession();
    await c.write(s, { "report.md": "# written on the fake provider", "sub/deep.txt": "deep" });
    await c.end(s);
    await until("the session-end checkpoint", async () => (await c.list(s.computerId))[0]);

    // the same deployment (database, secrets, checkpoint store), now with SANDBOX_PROVIDER=desktop
    desktop = await startTestApi({ ...secrets, SANDBOX_PROVIDER: "desktop" }, { database: fake.database });
    const moved = checkpointsOn(
      () => desktop as TestApi,
      () => w,
    );
    expectStatus(
      await moved.owner().post(`/v1/workspaces/${w.workspaceId}/computers/${s.computerId}/start`),
      200,
    );
    const row = await moved.computerRow(s.computerId);
    expect(row.provider_kind).toBe("desktop");
    const files = filesOf(await moved.home(s.computerId));
    // the new machine's empty home was not worth a before-restore revision
    expect((await moved.list(s.computerId)).map((r) => r.reason)).toEqual(["session-success"]);
    expect(files).toMatchObject({
      "report.md": sha("# written on the fake provider"),
      "sub/deep.txt": sha("deep"),
    });
  });
});
