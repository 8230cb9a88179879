/**
 * Backup and restore of the production stack (README "Backups") as an operator runs them: a
 * deployment with an account, a team bot and checkpoints of its computer is backed up with
 * `npm run backup`, its volumes, homes and computers are wiped, and `npm run restore` brings back
 * the account, the checkpoint history and the home byte for byte. Everything the deployment is asked
 * goes over HTTP; the homes are also compared on the host. A backup whose manifest was tampered
 * with is refused before anything is touched.
 */
import { createHash, randomBytes } from "node:crypto";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { expectStatus, TestClient } from "@cubicle/api/testing/harness";
import { createBot, SessionClient } from "@cubicle/api/testing/sessions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComposeStack, docker, inspect, run, UP_TIMEOUT_MS } from "../testing/compose.ts";

const PASSWORD = "correct horse battery staple";
const BLOB = "backup/blob.bin";
const NOTES = "backup/notes.txt";

/** A session's files API, as bytes both ways. */
interface HomeFiles {
  write(path: string, content: Buffer | string): Promise<void>;
  read(path: string): Promise<Buffer>;
}

const sha256 = (content: Buffer) => createHash("sha256").update(content).digest("hex");

describe("backup and restore of the Compose stack", () => {
  const stack = new ComposeStack({
    project: "cubicle-backup",
    edgeNet: "172.31.243",
    screensNet: "172.31.242",
    backendNet: "172.31.234",
    controlNet: "172.31.235",
  });
  const backups = mkdtempSync(join(tmpdir(), "cubicle-backups-"));
  const backup = join(backups, "full");
  const tag = randomBytes(3).toString("hex");
  const made = {
    email: `owner-${tag}@example.com`,
    workspaceId: "",
    botId: "",
    computerId: "",
    // the blob as the first checkpoint has it, then as the second (and the home) has it
    first: randomBytes(256 * 1024),
    second: randomBytes(256 * 1024),
    notes: `kept ${tag}\n`,
    checkpointIds: [] as string[],
    firstCheckpointId: "",
    homes: {} as Record<string, string>,
  };

  /** npm run backup or restore, as an operator of this stack runs it. */
  const script = (name: "backup" | "restore", ...args: string[]) =>
    run("npm", ["run", "--silent", name, "--", ...args], {
      ...stack.env,
      COMPOSE_PROJECT_NAME: stack.project,
      CUBICLE_ENV_FILE: stack.envFile,
    });

  const signedIn = async () => {
    const owner = new TestClient(stack.webUrl, [], stack.webUrl);
    const signIn = { email: made.email, password: PASSWORD };
    expectStatus(await owner.fromDashboard("/api/auth/sign-in/email", signIn), 200);
    return owner;
  };
  const computerPath = () => `/v1/workspaces/${made.workspaceId}/computers/${made.computerId}`;
  const checkpointIds = async (owner: TestClient) =>
    expectStatus(await owner.get(`${computerPath()}/checkpoints`), 200).json.items.map(
      (item: { id: string }) => item.id,
    );

  /**
   * A session on the bot, heartbeating as a working automation does (checkpoints on this machine can
   * outlast its lease), ended once `work` is done with its files.
   */
  const inSession = async (owner: TestClient, work: (home: HomeFiles) => Promise<void>) => {
    const sessions = new SessionClient({ client: owner }, made.workspaceId);
    const session = await sessions.opened(made.botId);
    const heartbeat = setInterval(() => void sessions.heartbeat(session), 10_000);
    const at = (path: string) => sessions.pathOf(session, `/files/content?path=${encodeURIComponent(path)}`);
    const fence = { "x-session-fence": String(session.fence) };
    try {
      await work({
        async write(path, content) {
          const response = await owner.fetch("PUT", at(path), {
            body: Buffer.from(content),
            headers: { "content-type": "application/octet-stream", ...fence },
          });
          expect(response.status, await response.text()).toBe(204);
        },
        async read(path) {
          const response = await owner.fetch("GET", at(path), { headers: fence });
          expect(response.status, path).toBe(200);
          return Buffer.from(await response.arrayBuffer());
        },
      });
    } finally {
      clearInterval(heartbeat);
    }
    expectStatus(await sessions.end(session, "success"), 200);
  };

  /** Every entry under the homes folder on the host: owner, mode, and content's sha256 or link target. */
  const homesOnHost = () => {
    const root = join(stack.homes, "homes");
    const tree: Record<string, string> = {};
    const walk = (path: string) => {
      const stat = lstatSync(path);
      const what = stat.isFile()
        ? sha256(readFileSync(path))
        : stat.isSymbolicLink()
          ? `-> ${readlinkSync(path)}`
          : stat.isDirectory()
            ? "folder"
            : "other";
      tree[relative(root, path) || "."] =
        `${stat.uid}:${stat.gid} ${(stat.mode & 0o7777).toString(8)} ${what}`;
      if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    };
    walk(root);
    return tree;
  };

  beforeAll(async () => {
    const init = await stack.init("docker");
    expect(init.code, init.output).toBe(0);
  }, UP_TIMEOUT_MS);

  afterAll(async () => {
    await stack.remove([made.workspaceId]);
    rmSync(stack.dir, { recursive: true, force: true });
    rmSync(backups, { recursive: true, force: true });
  }, UP_TIMEOUT_MS);

  it(
    "backs up a deployment with an account, a team bot and checkpoints of its computer's home",
    async () => {
      await stack.up();
      const owner = new TestClient(stack.webUrl, [], stack.webUrl);
      const signUp = { email: made.email, password: PASSWORD, name: "Owner" };
      expectStatus(await owner.fromDashboard("/api/auth/sign-up/email", signUp), 200);
      made.workspaceId = expectStatus(
        await owner.post("/v1/workspaces", { name: `Backup ${tag}` }),
        201,
      ).json.id;
      const bot = await createBot(owner, made.workspaceId, "team");
      made.botId = bot.id;
      made.computerId = bot.computerId;

      await inSession(owner, async (home) => {
        await home.write(BLOB, made.first);
        const checkpoints = `${computerPath()}/checkpoints`;
        made.firstCheckpointId = expectStatus(await owner.post(checkpoints), 201).json.id;
        await home.write(BLOB, made.second);
        await home.write(NOTES, made.notes);
        expectStatus(await owner.post(checkpoints), 201);

        // a running computer writes its home: the backup refuses, names it, and leaves no folder
        const refused = await script("backup", join(backups, "while-running"));
        expect(refused.code, refused.output).not.toBe(0);
        expect(refused.output).toContain(`cubicle-team-${made.workspaceId}`);
        expect(existsSync(join(backups, "while-running"))).toBe(false);
      });
      expectStatus(await owner.post(`${computerPath()}/stop`), 200);
      made.checkpointIds = await checkpointIds(owner);
      expect(made.checkpointIds).toContain(made.firstCheckpointId);
      expect(made.checkpointIds.length).toBeGreaterThanOrEqual(2);
      made.homes = homesOnHost();
      // a team bot works in its own folder of the team computer's home
      const blobOnHost = join(`team-${made.workspaceId}`, "bots", made.botId, BLOB);
      expect(made.homes[blobOnHost]).toContain(sha256(made.second));

      const done = await script("backup", backup);
      expect(done.code, done.output).toBe(0);
      const manifest = JSON.parse(readFileSync(join(backup, "manifest.json"), "utf8"));
      expect(Object.keys(manifest.parts).sort()).toEqual(["checkpoints", "homes", "postgres"]);
      // the api it stopped for the copy serves again
      expectStatus(await owner.get("/v1/workspaces"), 200);
    },
    2 * UP_TIMEOUT_MS,
  );

  it(
    "brings back the account, the checkpoint history and the home byte for byte after a wipe",
    async () => {
      // a new host, as far as the stack knows: no volumes, no computers, an empty homes folder
      await stack.remove([made.workspaceId]);
      const homes = join(stack.homes, "homes");
      for (const name of readdirSync(homes)) rmSync(join(homes, name), { recursive: true, force: true });
      expect(
        await docker("volume", "ls", "-q", "--filter", `label=com.docker.compose.project=${stack.project}`),
      ).toBe("");

      const restored = await script("restore", backup);
      expect(restored.code, restored.output).toBe(0);
      expect(homesOnHost()).toEqual(made.homes);

      await stack.up();
      const owner = await signedIn();
      const workspaces = expectStatus(await owner.get("/v1/workspaces"), 200).json;
      expect(JSON.stringify(workspaces)).toContain(made.workspaceId);
      const bots = expectStatus(await owner.get(`/v1/workspaces/${made.workspaceId}/bots`), 200).json;
      expect(JSON.stringify(bots)).toContain(made.botId);
      expect(await checkpointIds(owner)).toEqual(made.checkpointIds);

      await inSession(owner, async (home) => {
        expect((await home.read(BLOB)).equals(made.second)).toBe(true);
        expect((await home.read(NOTES)).toString()).toBe(made.notes);
      });

      // the store's revisions still open (sealed with the kept encryption key)
      const restore = `${computerPath()}/checkpoints/${made.firstCheckpointId}/restore`;
      expectStatus(await owner.post(restore, { into: "current" }), 200);
      await inSession(owner, async (home) => {
        expect((await home.read(BLOB)).equals(made.first)).toBe(true);
      });
      // at rest, so that its home stays as it is for the next case
      expectStatus(await owner.post(`${computerPath()}/stop`), 200);
    },
    2 * UP_TIMEOUT_MS,
  );

  it("refuses a backup whose manifest was tampered with, naming the part, and touches nothing", async () => {
    const tampered = join(backups, "tampered");
    cpSync(backup, tampered, { recursive: true });
    const manifestFile = join(tampered, "manifest.json");
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8"));
    manifest.parts.checkpoints.sha256 = "0".repeat(64);
    writeFileSync(manifestFile, JSON.stringify(manifest));
    const [api] = await stack.containersOf("api");
    const startedAt = (await inspect(api as string)).State.StartedAt;
    const homesBefore = homesOnHost();

    const refused = await script("restore", tampered);
    expect(refused.code, refused.output).not.toBe(0);
    expect(refused.output).toContain("the checkpoints part");
    expect(refused.output).toContain("nothing was restored");

    expect(await stack.containersOf("api")).toEqual([api]);
    expect((await inspect(api as string)).State.StartedAt).toBe(startedAt);
    expect(homesOnHost()).toEqual(homesBefore);
    const owner = await signedIn();
    expect(await checkpointIds(owner)).toEqual(expect.arrayContaining(made.checkpointIds));
  });
});
