import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { machineOfRecord } from "../../src/computers/repository.ts";
import { checkpointsOn, manifestsOn, writeUnderWay } from "../../testing/checkpoints.ts";
import { destroyMachines } from "../../testing/computers.ts";
import { expectStatus, type TestApi } from "../../testing/harness.ts";
import { filesOf } from "../../testing/homes.ts";
import { createBot, type OpenedSession, problem, SessionClient } from "../../testing/sessions.ts";
import { type LoginSite, startLoginSite } from "../../testing/site-for-computers.ts";
import {
  type SupervisorProcess,
  startApiOnSupervisor,
  TEST_COMPUTERS_NETWORK,
} from "../../testing/supervisor-process.ts";
import { until } from "../../testing/until.ts";
import { buildWorld, type World } from "../../testing/world.ts";

/** Containers, Chromium and a 31 s browser settle take their time on a busy host. */
const SLOW = 240_000;
const BRIDGE = "cubicle0";

/**
 * The checkpoint acceptance on real Docker computers with real Chromium in them: a cookie login
 * survives checkpoint → destroy → a fresh machine on an empty home; and a supervisor killed with
 * SIGKILL in the middle of a checkpoint leaves no partial revision, the previous one restoring
 * fine. The supervisor runs as its own process here, so that it can be killed.
 */
let supervisor: SupervisorProcess;
let t: TestApi;
let w: World;
let site: LoginSite;
const checkpointDir = mkdtempSync(join(tmpdir(), "cubicle-checkpoint-store-"));
const c = checkpointsOn(
  () => t,
  () => w,
);

beforeAll(async () => {
  ({ supervisor, t } = await startApiOnSupervisor({ CHECKPOINT_DIR: checkpointDir }));
  w = await buildWorld(t, "docker-checkpoints");
  site = await startLoginSite(TEST_COMPUTERS_NETWORK, BRIDGE);
}, SLOW);

afterAll(async () => {
  await site?.close();
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await supervisor?.remove();
  rmSync(checkpointDir, { recursive: true, force: true });
}, SLOW);

const sessions = () => new SessionClient({ client: w.people.owner }, w.workspaceId);

async function launchBrowser(s: OpenedSession, url: string) {
  expectStatus(await sessions().tool(s, "POST", "/launch-app", { app: "browser", url }), 202);
}

/** The entries of a revision, as its archive lists them, with their bytes. */
async function archived(computerId: string, checkpointId: string): Promise<Map<string, Buffer>> {
  const response = await c.owner().fetch("GET", `${c.checkpoints(computerId)}/${checkpointId}/archive`);
  if (!response.body) throw new Error("no archive");
  const parser = extract();
  Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>).pipe(parser);
  const entries = new Map<string, Buffer>();
  for await (const entry of parser) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    entries.set(entry.header.name, Buffer.concat(chunks));
  }
  return entries;
}

/** The files of a revision whose bytes contain `needle`. */
async function filesContaining(computerId: string, checkpointId: string, needle: string): Promise<string[]> {
  const entries = await archived(computerId, checkpointId);
  return [...entries].filter(([, bytes]) => bytes.includes(needle)).map(([name]) => name);
}

/** Files anywhere under `dir` whose bytes contain `needle`. */
function filesOnDiskContaining(dir: string, needle: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => readFileSync(path).includes(needle));
}

describe("checkpoints of Docker computers", () => {
  it(
    "keeps a browser's cookie login through checkpoint, destroy and a fresh machine on an empty home",
    async () => {
      const bot = await createBot(w.people.owner, w.workspaceId, "private");
      const first = await sessions().opened(bot.id);
      await launchBrowser(first, `${site.url}/login`);
      await until(
        "Chromium in the computer to sign in",
        async () => (site.requests.some((r) => r.path === "/" && r.signedIn) ? true : undefined),
        60_000,
      );
      // checkpointed while the bot works: its browser is waited for (it writes cookies up to 30 s
      // late), not stopped
      const whileInUse = await c.take(bot.computerId);
      const profileHolds = async (checkpointId: string) =>
        (await filesContaining(bot.computerId, checkpointId, site.cookieName)).some((name) =>
          name.includes(".browser-profiles/chromium/"),
        );
      expect(await profileHolds(whileInUse.id)).toBe(true);
      const stillRunning = await sessions().shell(first, { command: "pgrep -x chromium | wc -l" });
      expect(Number(stillRunning.stdout.trim())).toBeGreaterThan(0);

      expectStatus(await sessions().end(first, "success"), 200);
      // the session's end is checkpointed too; nobody uses the computer now, so its browser is
      // closed (a normal quit writes everything)
      const atEnd = await until(
        "the session-end checkpoint",
        async () => (await c.list(bot.computerId)).find((r) => r.reason === "session-success"),
        120_000,
      );
      expect(await profileHolds(atEnd.id)).toBe(true);
      // at rest the store holds nothing of the login in the clear, not even the cookie's name
      expect(filesOnDiskContaining(checkpointDir, site.cookieName)).toEqual([]);
      // Chromium made its caches in the profile; the revision has the profile without them
      const profile = ".browser-profiles/chromium";
      const liveCaches = ["Default/Cache", "Default/Code Cache", "GrShaderCache", "ShaderCache"].filter(
        (cache) => existsSync(join(supervisor.homeDir(bot.id), profile, cache)),
      );
      expect(liveCaches.length).toBeGreaterThan(0);
      const names = [...(await archived(bot.computerId, atEnd.id)).keys()];
      expect(names).toContain(`./${profile}/Local State`);
      for (const cache of liveCaches)
        expect(names.filter((name) => name.includes(`${profile}/${cache}`))).toEqual([]);

      expectStatus(
        await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/computers/${bot.computerId}/destroy`),
        200,
      );
      // a new host: the old home is gone, only the checkpoint store has it
      const home = supervisor.homeDir(bot.id);
      expect(existsSync(home)).toBe(true);
      rmSync(home, { recursive: true, force: true });

      const before = site.requests.length;
      const second = await sessions().opened(bot.id);
      const row = await c.computerRow(bot.computerId);
      expect(row.provider_ref).not.toBeNull();
      const restored = (await c.audits(bot.computerId, "checkpoint.restored")).at(-1);
      expect(restored?.data).toMatchObject({ into: "fresh" });
      await launchBrowser(second, `${site.url}/`);
      const visit = await until(
        "Chromium to open the site again",
        async () => site.requests.slice(before).find((r) => r.path === "/"),
        60_000,
      );
      expect(visit.signedIn).toBe(true);
      expectStatus(await sessions().end(second, "success"), 200);
    },
    SLOW,
  );

  it(
    "reads nothing and stores no new bytes when an unchanged 500 MB, 10,000-file home is checkpointed again",
    async () => {
      const bot = await createBot(w.people.owner, w.workspaceId, "private");
      const s = await sessions().opened(bot.id);
      const machine = await machineOfRecord(t.api.deps, await c.computerRow(bot.computerId));
      if (!machine) throw new Error("no machine");
      await machine.provider.closeBrowsers(machine.ref);
      const made = await sessions().shell(s, {
        command:
          "mkdir -p data && cd data && head -c 500000000 /dev/urandom | split -b 50000 -a 4 -d - part- && ls | wc -l",
        timeoutMs: 120_000,
      });
      expect(made.exit?.code).toBe(0);
      expect(made.stdout.trim()).toBe("10000");
      // a file changed under 2 s before a listing gets no stamp and is read again next time
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      // two 500 MB checkpoints can outlast the session's lease on a loaded machine: the session
      // heartbeats meanwhile, as a working automation does
      const beating = setInterval(() => void sessions().heartbeat(s), 10_000);
      // the real provider, watched: what each checkpoint asked the computer to read
      const listed = vi.spyOn(machine.provider, "listHome");
      const exported = vi.spyOn(machine.provider, "exportHome");
      const read = () => exported.mock.calls.map(([, options]) => options?.paths ?? "the whole home");
      try {
        const first = await c.take(bot.computerId);
        const firstRead = read();
        exported.mockClear();
        const second = await c.take(bot.computerId);
        expect(first.sizeBytes).toBeGreaterThanOrEqual(500_000_000);
        expect(second.fileCount).toBeGreaterThanOrEqual(10_000);
        expect(second.sha256).toBe(first.sha256);
        // listed both times; the first read the data by name, the second nothing at all
        expect(listed).toHaveBeenCalledTimes(2);
        expect(firstRead.flat().filter((path) => path.startsWith("data/part-"))).toHaveLength(10_000);
        expect(read()).toEqual([]);
        expect(second.newBytes).toBe(0);
      } finally {
        clearInterval(beating);
        listed.mockRestore();
        exported.mockRestore();
      }
      expectStatus(await sessions().end(s, "success"), 200);
    },
    SLOW,
  );

  it(
    "leaves no partial revision when the supervisor is killed (SIGKILL) mid-checkpoint; the previous one restores",
    async () => {
      const bot = await createBot(w.people.owner, w.workspaceId, "private");
      const s = await sessions().opened(bot.id);
      const computer = await c.computerRow(bot.computerId);
      const machine = await machineOfRecord(t.api.deps, computer);
      if (!machine) throw new Error("no machine");
      // no browser to wait for: this test is about the export being cut off
      await machine.provider.closeBrowsers(machine.ref);
      await c.write(s, { "state.txt": "before" });
      const previous = await c.take(bot.computerId);

      const big = await sessions().shell(s, {
        command: "head -c 400000000 /dev/urandom > big.bin && printf after > state.txt",
      });
      expect(big.exit?.code).toBe(0);
      const interrupted = c.owner().post(c.checkpoints(bot.computerId));
      // kill it once the store is busy writing this revision's content
      await until("the checkpoint to be under way", async () => writeUnderWay(checkpointDir), 60_000);
      await supervisor.kill9();
      const answer = await interrupted;
      expect(answer.status).toBeGreaterThanOrEqual(500);
      expect(answer.headers.get("content-type")).toContain("application/problem+json");

      // the catalog and the store know only the previous revision
      expect((await c.list(bot.computerId)).map((r) => r.id)).toEqual([previous.id]);
      expect(manifestsOn(checkpointDir, bot.id)).toEqual([`${previous.id}.json`]);
      const failed = (await c.audits(bot.computerId, "checkpoint.failed")).at(-1);
      expect(failed?.data).toMatchObject({ reason: "manual" });

      await supervisor.start();
      // the session may have expired meanwhile; end what is open so the restore may run
      await sessions().end(s, "failure");
      await c.restore(bot.computerId, previous.id, "current");
      expect(filesOf(await c.home(bot.computerId))).toEqual(
        filesOf(await c.download(bot.computerId, previous.id)),
      );
      expect(Object.keys(filesOf(await c.home(bot.computerId)))).not.toContain("big.bin");
      problem(await c.owner().get(`${c.checkpoints(bot.computerId)}/nope/archive`), 404, "NOT_FOUND");
    },
    SLOW,
  );
});
