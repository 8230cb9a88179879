/**
 * Faults of full disks and a computer killed under a checkpoint: the checkpoint store's disk
 * filled, a computer's own disk filled from inside, and `docker kill` in the middle of a
 * checkpoint's export. After each, the catalog must name only whole revisions that restore, the
 * home must be whole, and everything must work again once the fault is gone.
 *
 * The small disks are tmpfs mounts the test makes (it runs as root) and always unmounts.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statfsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkpointsOn, manifestsOn, writeUnderWay } from "@cubicle/api/testing/checkpoints";
import { destroyMachines } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi } from "@cubicle/api/testing/harness";
import { filesOf } from "@cubicle/api/testing/homes";
import { createBot, problem, SessionClient } from "@cubicle/api/testing/sessions";
import { type SupervisorProcess, startApiOnSupervisor } from "@cubicle/api/testing/supervisor-process";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tally } from "../../src/tally.ts";

const SLOW = 240_000;
const MiB = 1024 * 1024;

let supervisor: SupervisorProcess;
let t: TestApi;
let w: World;
/** The checkpoint store's own disk: big enough for every case, filled on purpose by one. */
const storeDisk = mkdtempSync(join(tmpdir(), "cubicle-checkpoint-disk-"));
const checkpointDir = join(storeDisk, "store");
const mounted: string[] = [];
const c = checkpointsOn(
  () => t,
  () => w,
);

function mountTmpfs(dir: string, options: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir]);
  mounted.push(dir);
}

function unmountAll(): void {
  for (const dir of mounted.splice(0).reverse()) {
    try {
      execFileSync("umount", [dir], { stdio: "ignore" });
    } catch {
      // still held by a process that is going away: detach it now, it frees itself after
      execFileSync("umount", ["-l", dir], { stdio: "ignore" });
    }
  }
}

beforeAll(async () => {
  mountTmpfs(storeDisk, "size=1g");
  ({ supervisor, t } = await startApiOnSupervisor({
    SANDBOX_RECONCILE_MS: "1000",
    CHECKPOINT_DIR: checkpointDir,
  }));
  w = await buildWorld(t, "disk-faults");
}, SLOW);

afterAll(async () => {
  try {
    if (t) {
      await destroyMachines(t);
      await t.close();
    }
    await supervisor?.stop();
  } finally {
    unmountAll();
    await supervisor?.remove();
    rmSync(storeDisk, { recursive: true, force: true });
  }
}, SLOW);

const sessions = () => new SessionClient({ client: w.people.owner }, w.workspaceId);
const sha = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** What the store must still be after a failed checkpoint: only `previous`, whole, nothing half-written. */
async function onlyWhole(
  homeKey: string,
  computerId: string,
  previousId: string,
  files: Record<string, string>,
) {
  const missing: string[] = [];
  const listed = (await c.list(computerId)).map((r) => r.id);
  if (listed.join() !== previousId) missing.push(`the catalog as it was (it lists ${listed.join(", ")})`);
  const manifests = manifestsOn(checkpointDir, homeKey);
  if (manifests.join() !== `${previousId}.json`) missing.push(`the manifests as they were (${manifests})`);
  const temps = readdirSync(join(checkpointDir, "tmp"));
  if (temps.length > 0) missing.push(`a clean store (temporary ${temps.join(", ")} left)`);
  // the download reads every object the revision names: a missing one fails it
  const restorable = filesOf(await c.download(computerId, previousId));
  if (JSON.stringify(restorable) !== JSON.stringify(files)) missing.push("the previous revision, whole");
  return missing;
}

describe("full disks and a computer killed mid-checkpoint", () => {
  it("the checkpoint store's disk full: the checkpoint fails naming it, the previous revision stays whole, the next one works once space returns", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    const s = await c.privateSession();
    await c.closeBrowsers(s.computerId);
    await c.write(s, { "state.txt": "before", "kept.bin": randomBytes(256 * 1024) });
    const previous = await c.take(s.computerId);
    const previousFiles = filesOf(await c.download(s.computerId, previous.id));

    // a home whose new content is twice the room left; random, so sealing cannot shrink it
    const big = randomBytes(8 * MiB);
    await c.write(s, { "big.bin": big, "state.txt": "after" });
    const filler = join(storeDisk, "filler");
    const free = () => {
      const disk = statfsSync(storeDisk);
      return disk.bavail * disk.bsize;
    };
    execFileSync("fallocate", ["-l", String(free() - 4 * MiB), filler]);
    expect(free()).toBeLessThanOrEqual(4 * MiB);

    faults.tried();
    const answer = await c.owner().post(c.checkpoints(s.computerId));
    const refusal = problem(answer, 507, "CHECKPOINT_STORE_FULL");
    expect(refusal.detail).toMatch(/no space left/i);
    const failed = (await c.audits(s.computerId, "checkpoint.failed")).at(-1);
    expect(failed?.data).toMatchObject({ reason: "manual", code: "NO_SPACE" });
    faults.refused();
    faults.lost(await onlyWhole(s.botId, s.computerId, previous.id, previousFiles));

    rmSync(filler);
    const next = await c.take(s.computerId);
    expect(filesOf(await c.download(s.computerId, next.id))).toMatchObject({
      "big.bin": sha(big),
      "state.txt": sha("after"),
    });
    await c.end(s);
    await c.restore(s.computerId, previous.id, "current");
    expect(filesOf(await c.home(s.computerId))).toEqual(previousFiles);
  });

  it("the computer's disk full: uploads and writing commands say so, reads go on, and it recovers once space is freed", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    const bot = await createBot(w.people.owner, w.workspaceId, "private");
    // this home alone gets a small disk of its own (mounted before its computer binds it), as a
    // host disk that fills up would be
    mountTmpfs(supervisor.homeDir(bot.id), "size=64m,uid=1000,gid=1000,mode=0750");
    const s = await sessions().opened(bot.id);
    const kept = randomBytes(1 * MiB).toString("base64");
    expectStatus(await sessions().write(s, "kept.txt", kept), 204);

    faults.tried();
    const fill = await sessions().shell(s, { command: "head -c 100000000 /dev/zero > filler" });
    expect(fill.exit?.code).not.toBe(0);
    expect(fill.stderr).toMatch(/no space left on device/i);
    faults.refused();

    faults.tried();
    const upload = await sessions().write(s, "new.txt", kept);
    const refusal = problem(upload, 507, "DISK_FULL");
    expect(refusal.detail).toMatch(/no space left/i);
    faults.refused();

    const missing: string[] = [];
    const read = await sessions().read(s, "kept.txt");
    if (read.status !== 200 || read.text !== kept) missing.push(`kept.txt while full (${read.status})`);
    const listing = await sessions().list(s);
    const names = (listing.json?.items ?? []).map((entry: { name: string }) => entry.name);
    if (!names.includes("kept.txt")) missing.push(`the listing while full (${listing.status})`);

    await c.remove(s, "filler");
    expectStatus(await sessions().write(s, "new.txt", kept), 204);
    for (const path of ["kept.txt", "new.txt"]) {
      const after = await sessions().read(s, path);
      if (after.status !== 200 || after.text !== kept) missing.push(`${path} after space returned`);
    }
    missing.push(...supervisor.uploadLeftovers(bot.id).map((path) => `leftover ${path}`));
    faults.lost(missing);
  });

  it("the computer killed (docker kill) mid-checkpoint: the checkpoint fails cleanly, the previous revision restores, the computer starts again whole", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    const s = await c.privateSession();
    await c.closeBrowsers(s.computerId);
    await c.write(s, { "state.txt": "before" });
    const previous = await c.take(s.computerId);
    const previousFiles = filesOf(await c.download(s.computerId, previous.id));
    const made = await sessions().shell(s, {
      command: "head -c 200000000 /dev/urandom > big.bin && printf after > state.txt && sha256sum big.bin",
      timeoutMs: 120_000,
    });
    expect(made.exit?.code).toBe(0);
    const bigSha = made.stdout.split(" ")[0];
    const container = (await c.computerRow(s.computerId)).provider_ref;
    if (!container) throw new Error("the computer has no container");

    faults.tried();
    const interrupted = c.owner().post(c.checkpoints(s.computerId));
    await until("the checkpoint to be under way", async () => writeUnderWay(checkpointDir), 60_000);
    execFileSync("docker", ["kill", container], { stdio: "ignore" });
    const answer = await interrupted;
    problem(answer, 502, "CHECKPOINT_FAILED");
    const failed = (await c.audits(s.computerId, "checkpoint.failed")).at(-1);
    expect(failed?.data).toMatchObject({ reason: "manual", code: "INVALID_ARCHIVE" });
    faults.refused();

    const missing = await onlyWhole(s.botId, s.computerId, previous.id, previousFiles);
    // once the api has seen it stopped, the session's next tool call starts it again, on the home
    // as it was
    await until("the api to see the computer stopped", async () =>
      (await c.computerRow(s.computerId)).state === "stopped" ? true : undefined,
    );
    const whole = await sessions().shell(s, { command: "cat state.txt; echo; sha256sum big.bin" });
    if (whole.stdout !== `after\n${bigSha}  big.bin\n`) missing.push(`the home (${whole.stdout.trim()})`);
    faults.lost(missing);

    await c.end(s, "failure");
    await c.restore(s.computerId, previous.id, "current");
    expect(filesOf(await c.home(s.computerId))).toEqual(previousFiles);
  });
});
