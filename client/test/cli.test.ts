import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { deployment, makeBot, memberClient, pngSize } from "../testing/index.ts";

const BIN = fileURLToPath(new URL("../bin/cubicle.mjs", import.meta.url));
/** A computer's first start (container, desktop, screens) is slow on a busy host. */
const SLOW = 240_000;

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  /** stdout as text */
  out: string;
}

/**
 * Runs the real CLI as a user's shell would, with only the variables given (plus PATH and HOME):
 * `input` is all its stdin (none by default), `onStdout` sees its output as it comes.
 */
function cubicle(
  args: string[],
  env: Record<string, string>,
  {
    input = "",
    onStdout,
  }: { input?: string; onStdout?: (text: string, child: ReturnType<typeof spawn>) => void } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    });
    child.stdin.end(input);
    const stdout: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout.push(chunk);
      onStdout?.(Buffer.concat(stdout).toString(), child);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const all = Buffer.concat(stdout);
      resolve({ code, stdout: all, stderr, out: all.toString() });
    });
  });
}

/** A user of the CLI: the deployment's url, a member's key, and config and session files of its own. */
async function user(apiKey = deployment().memberKey) {
  const dir = await mkdtemp(join(tmpdir(), "cubicle-cli-"));
  const env = {
    CUBICLE_URL: deployment().url,
    CUBICLE_API_KEY: apiKey,
    CUBICLE_CONFIG: join(dir, "config.json"),
    CUBICLE_SESSION_FILE: join(dir, "session.json"),
  };
  return { dir, env, run: (...args: string[]) => cubicle(args, env) };
}

describe.concurrent("the cubicle CLI", () => {
  it("opens a session, runs commands with their exit codes, observes, moves files and ends", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("CLI");
    const me = await user();

    const bots = await me.run("bots", "--json");
    expect(bots.code).toBe(0);
    expect(JSON.parse(bots.out).map((b: { name: string }) => b.name)).toContain(bot.name);

    const opened = await me.run("session", "open", bot.name);
    expect(opened).toMatchObject({ code: 0 });
    expect(opened.stderr).toMatch(/^Opening a session for .+… done in \d+\.\d s\n$/);
    const state = JSON.parse(await readFile(me.env.CUBICLE_SESSION_FILE, "utf8"));
    expect(state).toMatchObject({ botId: bot.id, botName: bot.name, url: deployment().url });
    expect(opened.out).toMatch(new RegExp(`^session +${state.sessionId}$`, "m"));
    expect((await stat(me.env.CUBICLE_SESSION_FILE)).mode & 0o777).toBe(0o600);

    const shown = await me.run("session", "--json");
    expect(JSON.parse(shown.out)).toMatchObject({ sessionId: state.sessionId, fence: state.fence });
    const firstExpiry = Date.parse(JSON.parse(shown.out).expiresAt);

    const computers = await me.run("computers", "--json");
    expect(JSON.parse(computers.out)).toContainEqual(
      expect.objectContaining({ id: state.computerId, state: "running" }),
    );

    // the command's exit code is the CLI's; its two streams stay apart
    expect((await me.run("shell", "exit 3")).code).toBe(3);
    expect(await me.run("shell", "echo a; echo b >&2")).toMatchObject({ code: 0, out: "a\n", stderr: "b\n" });
    const events = await me.run("shell", "--json", "echo hi; exit 4");
    expect(events.code).toBe(4);
    expect(
      events.out
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { type: "stdout", data: "hi\n" },
      { type: "exit", code: 4, truncated: false },
    ]);

    // Ctrl-C while the command runs kills it: 130, long before its sleep ends
    const started = Date.now();
    const interrupted = await cubicle(["shell", "echo started; sleep 60"], me.env, {
      onStdout: (text, child) => {
        if (text.includes("started")) child.kill("SIGINT");
      },
    });
    expect(interrupted).toMatchObject({ code: 130, out: "started\n" });
    expect(Date.now() - started).toBeLessThan(30_000);

    const shot = join(me.dir, "x.png");
    expect((await me.run("observe", "-o", shot)).code).toBe(0);
    expect(pngSize(await readFile(shot))).toEqual({ width: 1280, height: 800 });

    // bytes that are not text, up and down again unchanged
    const local = join(me.dir, "blob.bin");
    const content = randomBytes(256 * 1024);
    await writeFile(local, content);
    expect((await me.run("files", "put", local, "cli/blob.bin")).code).toBe(0);
    const copy = join(me.dir, "copy.bin");
    expect((await me.run("files", "get", "cli/blob.bin", "-o", copy)).code).toBe(0);
    expect(Buffer.compare(await readFile(copy), content)).toBe(0);
    const piped = await me.run("files", "get", "cli/blob.bin");
    expect(Buffer.compare(piped.stdout, content)).toBe(0);
    const listed = await me.run("files", "ls", "cli", "--json");
    expect(JSON.parse(listed.out).items).toEqual([
      expect.objectContaining({ name: "blob.bin", type: "file", size: content.length }),
    ]);

    // each command heartbeats the session: it now lasts a lease past the last one, not the opening
    // (read through the library, which does not heartbeat a resumed session)
    const record = await memberClient().resumeSession(bot.id, state.sessionId);
    expect(record.expiresAt.getTime()).toBeGreaterThan(firstExpiry);

    // the computer's checkpoints as JSON (the next test takes and restores one, on a computer of its own)
    const checkpoints = await me.run("checkpoints", "ls", state.computerId, "--json");
    expect(checkpoints.code).toBe(0);
    expect(Array.isArray(JSON.parse(checkpoints.out))).toBe(true);

    // someone else (another state file) cannot take the bot while the session is live
    const other = await user();
    const busy = await other.run("session", "open", bot.name);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/^error: .+ \(COMPUTER_BUSY\)$/m);
    const refusal = busy.stderr.split("\n").find((l) => l.startsWith("error: "));
    expect(refusal).toContain('held by API key "member robot"');
    expect(refusal).toContain(state.sessionId);

    const ended = await me.run("session", "end");
    expect(ended).toMatchObject({ code: 0, out: `Ended session ${state.sessionId} (success).\n` });
    await expect(stat(me.env.CUBICLE_SESSION_FILE)).rejects.toMatchObject({ code: "ENOENT" });
    const after = await me.run("shell", "echo late");
    expect(after).toMatchObject({ code: 2, out: "" });
    expect(after.stderr).toContain("No open session: run `cubicle session open <bot>` first.");
  });

  it("keeps its session through a command longer than the lease, resumed in the workspace saved with it", {
    timeout: SLOW,
  }, async () => {
    const bot = await makeBot("CLI long");
    const me = await user();
    expect((await me.run("session", "open", bot.name)).code).toBe(0);

    // the command heartbeats the session while it runs: it is still open when the sleep is over
    const seconds = (deployment().sessionLeaseMs * 1.5) / 1000;
    expect(await me.run("shell", `sleep ${seconds}; echo done`)).toMatchObject({ code: 0, out: "done\n" });
    expect(await me.run("shell", "echo still open")).toMatchObject({ code: 0, out: "still open\n" });

    // resumed in the saved workspace, not the key's: one the key cannot see is refused as the api
    // refuses it, and the session is kept for when that passes
    const file = me.env.CUBICLE_SESSION_FILE;
    const saved = await readFile(file, "utf8");
    const state = JSON.parse(saved);
    await writeFile(file, JSON.stringify({ ...state, workspaceId: randomUUID() }));
    const elsewhere = await me.run("session");
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/^error: .+ \(WORKSPACE_NOT_FOUND\)\n$/);
    await writeFile(file, saved);
    expect((await me.run("session", "end")).code).toBe(0);

    // a session the api does not know is forgotten
    await writeFile(file, JSON.stringify({ ...state, sessionId: randomUUID() }));
    const unknown = await me.run("shell", "true");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("is no longer open");
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("takes a checkpoint of a computer and restores it, with progress on stderr", {
    timeout: SLOW,
  }, async () => {
    // a Private Computer: a restore needs the computer free of sessions, which the shared one never is
    const bot = await makeBot("CLI checkpoints", "private");
    const me = await user();
    const note = join(me.dir, "note.txt");
    const inSession = async (text: string) => {
      expect((await me.run("session", "open", bot.name)).code).toBe(0);
      await writeFile(note, text);
      expect((await me.run("files", "put", note, "note.txt")).code).toBe(0);
      const { computerId } = JSON.parse(await readFile(me.env.CUBICLE_SESSION_FILE, "utf8"));
      expect((await me.run("session", "end")).code).toBe(0);
      return computerId as string;
    };
    const computerId = await inSession("before");

    const taken = await me.run("checkpoints", "take", computerId, "--json");
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toMatch(
      new RegExp(`^Taking a checkpoint of ${computerId}… done in \\d+\\.\\d s\n$`),
    );
    const checkpoint = JSON.parse(taken.out);
    expect(checkpoint).toMatchObject({ computerId, reason: "manual" });
    const listed = await me.run("checkpoints", "ls", computerId);
    expect(listed.out).toMatch(new RegExp(`^${checkpoint.id} +manual `, "m"));

    await inSession("after");
    // restoring is an admin's; the member's key is refused, the admin's puts the home back
    const refused = await me.run("checkpoints", "restore", computerId, checkpoint.id);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/\(ROLE_FORBIDDEN\)$/m);
    const admin = await user(deployment().adminKey);
    const restored = await admin.run("checkpoints", "restore", computerId, checkpoint.id);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stderr).toMatch(/^Restoring .+… done in \d+\.\d s\n$/);

    expect((await me.run("session", "open", bot.name)).code).toBe(0);
    expect((await me.run("files", "get", "note.txt")).out).toBe("before");
    expect((await me.run("session", "end")).code).toBe(0);
  });

  it("refuses a bad key clearly, and logs in to a private config file that later commands use", async () => {
    const stranger = await user("cub_not-a-real-key");
    const refused = await stranger.run("bots");
    expect(refused).toMatchObject({ code: 1, out: "" });
    expect(refused.stderr).toMatch(/^error: .+ \(INVALID_API_KEY\)\n$/);
    const problem = await stranger.run("bots", "--json");
    expect(problem.code).toBe(1);
    expect(JSON.parse(problem.stderr)).toMatchObject({ status: 401, code: "INVALID_API_KEY" });

    const me = await user();
    const { CUBICLE_API_KEY: key, CUBICLE_URL: url, ...files } = me.env;
    // the key comes on stdin (kept out of `ps`); none there is a usage error
    const keyless = await cubicle(["login", "--url", url, "--api-key", "-"], files);
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toContain("login needs an API key");
    // an older config readable by all is replaced by one only its owner may read, nothing left beside it
    await writeFile(files.CUBICLE_CONFIG, "{}\n", { mode: 0o644 });
    const login = await cubicle(["login", "--url", url], files, { input: `${key}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.out + login.stderr).not.toContain(key);
    expect((await stat(files.CUBICLE_CONFIG)).mode & 0o777).toBe(0o600);
    expect(await readdir(me.dir)).toEqual(["config.json"]);
    expect(JSON.parse(await readFile(files.CUBICLE_CONFIG, "utf8"))).toEqual({ url, apiKey: key });
    // only the file now: no CUBICLE_URL or CUBICLE_API_KEY in the environment
    const computers = await cubicle(["computers"], files);
    expect(computers.code).toBe(0);
    expect(computers.out).toMatch(/^ID +OF +STATE +PROVIDER +SESSIONS$/m);
    // the audit trail, for an admin: the bots and keys made for the suites are in it
    const admin = await user(deployment().adminKey);
    const audit = await admin.run("audit", "--json", "--limit", "5");
    expect(audit.code).toBe(0);
    expect(JSON.parse(audit.out).items.length).toBeGreaterThan(0);
    expect(JSON.parse(audit.out).items.length).toBeLessThanOrEqual(5);
    // the environment's credentials win over it, as a set: half of them is refused, never
    // completed from the file (an environment's key is not sent to the url saved by login)
    const bad = "cub_not-a-real-key";
    const overridden = await cubicle(["bots"], { ...files, CUBICLE_URL: url, CUBICLE_API_KEY: bad });
    expect(overridden.code).toBe(1);
    expect(overridden.stderr).toMatch(/\(INVALID_API_KEY\)\n$/);
    const keyOnly = await cubicle(["bots"], { ...files, CUBICLE_API_KEY: bad });
    expect(keyOnly).toMatchObject({ code: 2, out: "" });
    expect(keyOnly.stderr).toMatch(/^error: CUBICLE_API_KEY is set but CUBICLE_URL is not/);
    const urlOnly = await cubicle(["bots", "--json"], { ...files, CUBICLE_URL: url });
    expect(urlOnly.code).toBe(2);
    expect(JSON.parse(urlOnly.stderr)).toMatchObject({ code: "NOT_CONFIGURED" });
    expect(JSON.parse(urlOnly.stderr).detail).toMatch(/^CUBICLE_URL is set but CUBICLE_API_KEY is not/);
  });

  it("reports a malformed config file in one line, for `cubicle mcp` too", async () => {
    const { env } = await user();
    const { CUBICLE_API_KEY: _key, CUBICLE_URL: _url, ...files } = env;
    await writeFile(files.CUBICLE_CONFIG, "{not json");
    for (const args of [["bots"], ["mcp", "--bot", "anyone"]]) {
      const failed = await cubicle(args, files);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^error: .+ is not valid JSON \(.+\)\n$/);
      expect(failed.stderr).toContain(files.CUBICLE_CONFIG);
    }
  });
});
