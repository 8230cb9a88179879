/**
 * The Box emulator over plain fetch (Box has no SDK: the wire contract is the client), with real
 * desktop containers. The cases run in order and share two boxes: `main` (account secrets, its own
 * env) is used for commands, files and the desktop, then archived, resumed and adopted by a
 * restarted emulator; `bare` (noEnv) shows the env rules, its TTL running out and the delete.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type BoxEmulator, startBoxEmulator } from "../../src/box/index.ts";
import { firstMessage } from "../../src/testing/websocket.ts";

const instance = `test-${randomUUID().slice(0, 8)}`;
const apiKey = `box_${randomUUID().replaceAll("-", "")}`;
let emulator: BoxEmulator;
let main: string;
let bare: string;

// biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON came back and assert on it.
type Json = Record<string, any>;

async function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: Json; headers: Headers }> {
  const response = await fetch(`${emulator.apiUrl}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${apiKey}`,
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, json: (await response.json()) as Json, headers: response.headers };
}

const state = async (id: string) => (await api("GET", `/boxes/${id}`)).json.box?.state as string | undefined;

/** Polls `read` every 200 ms until `done` holds for its value (or `timeoutMs` passes); that value. */
async function pollFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const reaches = (id: string, wanted: string, timeoutMs = 30_000) =>
  pollFor(
    () => state(id),
    (now) => now === wanted,
    timeoutMs,
  );

const run = async (id: string, command: string, options: Json = {}) =>
  (await api("POST", `/boxes/${id}/commands`, { command, ...options })).json;

/** The desktop URL once the box's VNC is up; the "provisioning" answers before it are counted. */
async function desktopUrl(id: string): Promise<{ url: URL; provisioning: number }> {
  let provisioning = 0;
  const answer = await pollFor(
    async () => (await api("POST", `/boxes/${id}/desktop?vnc=1`, { publicAccess: false })).json,
    (json) => {
      if (json.type === "desktop.provisioning") provisioning++;
      return json.type === "desktop.url";
    },
    20_000,
  );
  return { url: new URL(answer.desktopUrl), provisioning };
}

const socketUrl = (page: URL) =>
  `ws://${page.host}${page.pathname.replace(/vnc\.html$/, "websockify")}?_token=${page.searchParams.get("_token")}`;

beforeAll(async () => {
  emulator = await startBoxEmulator({ instance, apiKey });
});

afterAll(async () => {
  await emulator?.close({ removeBoxes: true });
});

describe("Box emulator", () => {
  it("refuses a missing or wrong key (401), and answers failNext's 429 with Retry-After first", async () => {
    const anonymous = await fetch(`${emulator.apiUrl}/boxes/bx_23456789`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ ok: false, type: "box.error", code: "unauthorized" });
    expect(
      (await api("GET", "/boxes/bx_23456789", undefined, { Authorization: "Bearer box_wrong" })).status,
    ).toBe(401);
    emulator.failNext(2, 429, 7);
    for (let i = 0; i < 2; i++) {
      const limited = await api("GET", "/boxes/bx_23456789");
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("7");
      expect(limited.json).toMatchObject({
        ok: false,
        status: 429,
        requestId: expect.stringMatching(/^req_/),
      });
    }
    expect((await api("GET", "/boxes/bx_23456789")).json).toMatchObject({ code: "box_not_found" });
    expect((await api("POST", "/boxes", "{not json")).json).toMatchObject({ code: "invalid_json" });
  });

  it("refuses reserved env names and bad TTLs without making a box", async () => {
    for (const name of ["ASCII_TOKEN", "BOX_ID", "ASCII_ANYTHING", "BOX_CLI_TOKEN", "AGENT_ID"]) {
      const refused = await api("POST", "/boxes", { env: { [name]: "x" } });
      expect([refused.status, refused.json.code]).toEqual([400, "invalid_env"]);
    }
    for (const ttlSeconds of [0, 2_592_001, 1.5, "soon"]) {
      expect((await api("POST", "/boxes", { ttlSeconds })).json.code).toBe("invalid_ttl");
    }
    expect(await emulator.boxes()).toEqual([]);
  });

  it("creates boxes (202 provisioning), refuses commands while they start (409), ready after ~3 s", async () => {
    const started = Date.now();
    const [first, second] = await Promise.all([
      api("POST", "/boxes", { name: "main", ttlSeconds: 600, env: { GREETING: "hello" } }),
      api("POST", "/boxes", { name: "bare", ttlSeconds: 600, noEnv: true }),
    ]);
    expect(first.status).toBe(202);
    expect(first.json).toMatchObject({
      ok: true,
      type: "box.created",
      status: "provisioning",
      ttlSeconds: 600,
      box: { name: "main", state: "provisioning", noEnv: false, ttlSeconds: 600, desktopAvailable: false },
    });
    main = first.json.box.id;
    bare = second.json.box.id;
    expect(main).toMatch(/^bx_[23456789abcdefghjkmnpqrstuvwxyz]{8}$/);
    expect(second.json.box).toMatchObject({ noEnv: true, environment: null });
    const starting = await api("POST", `/boxes/${main}/commands`, { command: "true" });
    expect([starting.status, starting.json.code]).toEqual([409, "box_starting"]);
    await reaches(main, "ready");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    await reaches(bare, "ready");
    const box = (await api("GET", `/boxes/${main}`)).json;
    expect(box).toMatchObject({ type: "box.info", box: { state: "ready", desktopAvailable: true } });
    expect(box.box.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  it("runs a sync command: stdout and stderr apart, exit code, cwd, the box's user, no DISPLAY", async () => {
    await run(main, "mkdir -p work/deep");
    const result = await run(
      main,
      'echo "out $(pwd) $(whoami) $(printenv DISPLAY || echo unset)"; echo err >&2; exit 3',
      {
        cwd: "work/deep",
      },
    );
    expect(result).toMatchObject({
      type: "command.finished",
      success: false,
      exitCode: 3,
      signal: null,
      stdout: "out /home/user/work/deep user unset\n",
      stderr: "err\n",
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
      cwd: "/home/user/work/deep",
    });
    expect(
      (await api("POST", `/boxes/${main}/commands`, { command: "true", timeoutSeconds: 601 })).json.code,
    ).toBe("invalid_timeout");
    expect((await api("POST", `/boxes/${main}/commands`, { command: "true", cwd: "nowhere" })).status).toBe(
      400,
    );
  });

  it("caps each stream at 1 MiB and says so", async () => {
    const result = await run(main, "head -c 1100000 /dev/zero | tr '\\0' a; printf tail >&2");
    expect(result.stdout).toHaveLength(1024 * 1024);
    expect(result).toMatchObject({
      stdoutTruncated: true,
      stderr: "tail",
      stderrTruncated: false,
      exitCode: 0,
    });
  });

  it("times a command out: timedOut, SIGKILL, and everything it started is killed", async () => {
    const started = Date.now();
    const result = await run(main, "sleep 60 & echo $! > /tmp/child.pid; sleep 60", { timeoutSeconds: 1 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result).toMatchObject({ timedOut: true, exitCode: null, signal: "SIGKILL", success: false });
    expect((await run(main, 'kill -0 "$(cat /tmp/child.pid)" && echo alive || echo gone')).stdout).toBe(
      "gone\n",
    );
  });

  it("starts a detached command and reports it by processId, with log tails", async () => {
    const started = await run(main, "printf abcdefghij; printf XYZ >&2; sleep 1; printf klm", {
      detached: true,
    });
    expect(started).toMatchObject({ type: "command.started", success: true, cwd: "/home/user" });
    const { processId } = started;
    expect(started.logPath).toBe(`/home/user/.ascii/processes/${processId}.log`);
    expect(started.errLogPath).toBe(`/home/user/.ascii/processes/${processId}.err.log`);
    const status = (query = "") => api("GET", `/boxes/${main}/commands/${processId}${query}`);
    expect((await status()).json).toMatchObject({
      status: "running",
      running: true,
      known: true,
      exitCode: null,
    });
    const done = await pollFor(
      async () => (await status()).json,
      (json) => json.status === "exited",
      10_000,
    );
    expect(done).toMatchObject({
      type: "command.status",
      processId,
      pid: started.pid,
      running: false,
      exitCode: 0,
      signal: null,
      stdout: "abcdefghijklm",
      stderr: "XYZ",
      stdoutTruncated: false,
    });
    expect(Date.parse(done.finishedAt)).toBeGreaterThan(Date.parse(done.startedAt));
    expect((await status("?tailBytes=4")).json).toMatchObject({
      stdout: "jklm",
      stdoutTruncated: true,
      stderr: "XYZ",
    });
    for (const tail of ["0", "524289", "many"]) {
      expect((await status(`?tailBytes=${tail}`)).json.code).toBe("invalid_tail_bytes");
    }
    expect((await status("?tailBytes=524288")).status).toBe(200);
    expect((await api("GET", `/boxes/${main}/commands/99999`)).json.code).toBe("process_not_found");
    const killed = await run(main, "kill -KILL $$", { detached: true });
    expect(
      await pollFor(
        async () => (await api("GET", `/boxes/${main}/commands/${killed.processId}`)).json,
        (json) => json.status === "exited",
        10_000,
      ),
    ).toMatchObject({ exitCode: null, signal: "SIGKILL", success: false });
  });

  it("writes and reads files under /home/user and /tmp only, as the user", async () => {
    const written = await api("PUT", `/boxes/${main}/files`, {
      path: "notes/new/hello.txt",
      content: "héllo\n",
    });
    expect(written.json).toMatchObject({
      type: "file.written",
      path: "/home/user/notes/new/hello.txt",
      encoding: "utf8",
      size: 7,
    });
    expect((await api("GET", `/boxes/${main}/files?path=notes/new/hello.txt`)).json).toMatchObject({
      type: "file.read",
      path: "/home/user/notes/new/hello.txt",
      encoding: "utf8",
      size: 7,
      content: "héllo\n",
    });
    expect((await run(main, "stat -c %U notes notes/new notes/new/hello.txt")).stdout).toBe(
      "user\nuser\nuser\n",
    );
    const blob = randomBytes(300_000);
    await api("PUT", `/boxes/${main}/files`, {
      path: "/tmp/blob.bin",
      content: blob.toString("base64"),
      encoding: "base64",
    });
    const read = (await api("GET", `/boxes/${main}/files?path=/tmp/blob.bin&encoding=base64`)).json;
    expect(Buffer.from(read.content, "base64").equals(blob)).toBe(true);
    await run(main, "ln -sfn /etc /home/user/etc-link");
    const refusals: Array<[string, number, string]> = [
      ["/etc/passwd", 400, "invalid_path"],
      ["../../etc/passwd", 400, "invalid_path"],
      ["etc-link/passwd", 400, "invalid_path"],
      ["notes/missing.txt", 404, "file_not_found"],
      ["notes", 400, "not_a_file"],
    ];
    for (const [path, status, code] of refusals) {
      const answer = await api("GET", `/boxes/${main}/files?path=${encodeURIComponent(path)}`);
      expect([path, answer.status, answer.json.code]).toEqual([path, status, code]);
    }
    expect((await api("PUT", `/boxes/${main}/files`, { path: "/etc/evil", content: "x" })).json.code).toBe(
      "invalid_path",
    );
  });

  it("gives account secrets and the box's env to a box's commands, and none to a noEnv box", async () => {
    const withSecrets = await run(main, 'echo "$GREETING $BOX_ID"; printenv ASCII_TOKEN | cut -c1-15');
    expect(withSecrets.stdout).toBe(`hello ${main}\nascii_emulated_\n`);
    const without = await run(bare, "printenv ASCII_TOKEN BOX_ID || echo none");
    expect(without.stdout).toBe("none\n");
  });

  it("counts the TTL from PATCH: a new ttlSeconds pushes archiveAfter, and expiry archives", async () => {
    const before = (await api("GET", `/boxes/${bare}`)).json.box.archiveAfter;
    const pushed = await api("PATCH", `/boxes/${bare}`, { ttlSeconds: 1200, name: "bare again" });
    expect(pushed.json).toMatchObject({ type: "box.info", box: { ttlSeconds: 1200, name: "bare again" } });
    expect(Date.parse(pushed.json.box.archiveAfter) - Date.parse(before)).toBeGreaterThan(500_000);
    const short = await api("PATCH", `/boxes/${bare}`, { ttlSeconds: 2 });
    expect(Date.parse(short.json.box.archiveAfter) - Date.now()).toBeLessThanOrEqual(2_000);
    await reaches(bare, "archiving", 6_000);
    await reaches(bare, "archived", 10_000);
    expect((await api("GET", `/boxes/${bare}`)).json.box).toMatchObject({ archiveAfter: null, ip: null });
    const archived = await api("POST", `/boxes/${bare}/commands`, { command: "true" });
    expect([archived.status, archived.json.code]).toEqual([409, "box_archived"]);
  });

  it("keeps noEnv one-way on resume, and resumes only an archived box", async () => {
    const widened = await api("POST", `/boxes/${bare}/resume`, { noEnv: false });
    expect([widened.status, widened.json.code]).toEqual([409, "no_env_one_way"]);
    const running = await api("POST", `/boxes/${main}/resume`, {});
    expect([running.status, running.json.code]).toEqual([409, "box_not_archived"]);
    const resumed = await api("POST", `/boxes/${bare}/resume`, { noEnv: true, ttlSeconds: 600 });
    expect(resumed.status).toBe(202);
    expect(resumed.json).toMatchObject({
      type: "box.resuming",
      id: bare,
      status: "resuming",
      box: { state: "provisioning", noEnv: true, ttlSeconds: 600 },
    });
  });

  it("deletes only with the confirm header: 409 without or mismatched, 202, then 404", async () => {
    const missing = await api("DELETE", `/boxes/${bare}`);
    expect([missing.status, missing.json.code]).toEqual([409, "confirm_delete_required"]);
    const wrong = await api("DELETE", `/boxes/${bare}`, undefined, { "X-Ascii-Confirm-Delete": main });
    expect([wrong.status, wrong.json.code]).toEqual([409, "confirm_delete_required"]);
    const started = Date.now();
    const deleted = await api("DELETE", `/boxes/${bare}`, undefined, { "X-Ascii-Confirm-Delete": bare });
    expect(deleted.status).toBe(202);
    const { operation } = deleted.json;
    expect(operation).toMatchObject({
      id: expect.stringMatching(/^bdop_[0-9a-f]{32}$/),
      kind: "box",
      targetId: bare,
    });
    expect(await state(bare)).toBe("deleting");
    await pollFor(
      async () => (await api("GET", `/boxes/${bare}`)).status,
      (status) => status === 404,
      10_000,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect((await api("GET", `/deletion-operations/${operation.id}`)).json).toMatchObject({
      type: "deletion_operation",
      operation: { status: "completed", attemptCount: 1, completedAt: expect.any(String) },
    });
  });

  it("serves the desktop after a few 'provisioning' answers: the page and the VNC socket need the token", async () => {
    expect((await api("POST", `/boxes/${main}/desktop`, {})).json.code).toBe("vnc_required");
    const { url, provisioning } = await desktopUrl(main);
    expect(provisioning).toBeGreaterThan(0);
    expect(url.pathname).toBe(`/desktop/${main}/vnc.html`);
    expect(url.searchParams.get("password")).toMatch(/^.{8}$/);
    expect((await fetch(url)).status).toBe(200);
    const tokenless = new URL(url);
    tokenless.searchParams.delete("_token");
    expect((await fetch(tokenless)).status).toBe(403);
    expect(await firstMessage(socketUrl(url), {})).toMatch(/^RFB 003\.00\d\n$/);
    await expect(firstMessage(socketUrl(tokenless), {})).rejects.toThrow("HTTP 403");
    const shot = await run(
      main,
      "DISPLAY=:0 import -window root png:- | wc -c; DISPLAY=:0 xdotool getdisplaygeometry",
    );
    expect(shot.stdout.split("\n")[1]).toBe("1280 800");
  });

  it("archives on stop (socket cut, token void) and resumes with a new token; an old command is lost", async () => {
    const before = (await desktopUrl(main)).url;
    const socket = new WebSocket(socketUrl(before));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise((resolve) => socket.once("message", resolve));
    const detached = await run(main, "sleep 600", { detached: true });
    const started = Date.now();
    const stopping = await api("POST", `/boxes/${main}/stop`, {});
    expect(stopping.status).toBe(202);
    expect(stopping.json).toMatchObject({
      type: "box.stopping",
      id: main,
      status: "archiving",
      box: { state: "archiving" },
    });
    await closed;
    expect((await api("POST", `/boxes/${main}/stop`, {})).json).toMatchObject({ status: "archiving" });
    expect((await api("POST", `/boxes/${main}/desktop?vnc=1`, {})).json.code).toBe("box_archived");
    await expect(firstMessage(socketUrl(before), {})).rejects.toThrow("HTTP 403");
    await reaches(main, "archived", 15_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(5_000);
    expect((await api("GET", `/boxes/${main}`)).json.box.snapshotAvailable).toBe(true);

    const resumed = await api("POST", `/boxes/${main}/resume`, {});
    expect(resumed.json).toMatchObject({
      type: "box.resuming",
      status: "resuming",
      box: { state: "provisioning" },
    });
    await reaches(main, "ready");
    expect((await api("GET", `/boxes/${main}/files?path=notes/new/hello.txt`)).json.content).toBe("héllo\n");
    expect((await api("GET", `/boxes/${main}/commands/${detached.processId}`)).json).toMatchObject({
      status: "lost",
      known: false,
      running: false,
    });
    const after = await desktopUrl(main);
    expect(after.provisioning).toBeGreaterThan(0);
    expect(after.url.searchParams.get("_token")).not.toBe(before.searchParams.get("_token"));
    expect(after.url.searchParams.get("password")).not.toBe(before.searchParams.get("password"));
    await expect(firstMessage(socketUrl(before), {})).rejects.toThrow("HTTP 403");
    expect(await firstMessage(socketUrl(after.url), {})).toMatch(/^RFB 003\.00\d\n$/);
  });

  it("keeps its boxes across a restart with the same instance, settings included", async () => {
    await api("PATCH", `/boxes/${main}`, { name: "main, renamed" });
    await emulator.close();
    emulator = await startBoxEmulator({ instance, apiKey });
    await reaches(main, "ready");
    expect((await api("GET", `/boxes/${main}`)).json.box).toMatchObject({
      name: "main, renamed",
      noEnv: false,
      ttlSeconds: 600,
    });
    expect((await run(main, "cat notes/new/hello.txt")).stdout).toBe("héllo\n");
  });

  it("logs every API request without secrets, and forgets a box behind its users' back", async () => {
    await api("PATCH", `/boxes/${main}`, { ttlSeconds: 900 });
    await api("GET", `/boxes/${main}/commands/1?tailBytes=10`);
    const log = emulator.requests();
    expect(log.slice(-2)).toEqual([
      { method: "PATCH", path: `/api/box/v1/boxes/${main}`, query: {}, body: { ttlSeconds: 900 } },
      { method: "GET", path: `/api/box/v1/boxes/${main}/commands/1`, query: { tailBytes: "10" }, body: null },
    ]);
    expect(log[0]).toMatchObject({ method: "GET", path: `/api/box/v1/boxes/${main}` });
    expect(JSON.stringify(log)).not.toContain(apiKey);
    expect(await emulator.boxes()).toEqual([
      expect.objectContaining({
        id: main,
        name: "main, renamed",
        state: "ready",
        noEnv: false,
        ttlSeconds: 900,
      }),
    ]);
    await emulator.forget(main);
    expect((await api("GET", `/boxes/${main}`)).status).toBe(404);
    expect(await emulator.boxes()).toEqual([]);
  });
});
