import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Computer } from "@cubicle/db";
import { extract, pack } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { machineFor } from "../testing/computers.ts";
import { expectStatus, startTestApi, type TestApi } from "../testing/harness.ts";
import { createBot, type OpenedSession, problem, SessionClient } from "../testing/sessions.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * The session tools on the fake provider: where paths lead on Team and Private computers, files,
 * the streamed shell, screens (observe, act, apps) and archives. Real Docker computers run the
 * acceptance path in sessions.docker.test.ts.
 */
let t: TestApi;
let w: World;
let robot: SessionClient;
let team: { bot: { id: string; computerId: string }; s: OpenedSession };
let priv: { bot: { id: string; computerId: string }; s: OpenedSession };

beforeAll(async () => {
  t = await startTestApi({ SANDBOX_COMMAND_TIMEOUT_MS: "5000" });
  w = await buildWorld(t, "tools");
  const key = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: "tools", role: "member" }),
    201,
  ).json.key;
  robot = new SessionClient({ client: t.client(), apiKey: key }, w.workspaceId);
  const teamBot = await createBot(w.people.admin, w.workspaceId);
  const privateBot = await createBot(w.people.admin, w.workspaceId, "private");
  team = { bot: teamBot, s: await robot.opened(teamBot.id) };
  priv = { bot: privateBot, s: await robot.opened(privateBot.id) };
});
afterAll(() => t?.close());

const computer = (id: string) =>
  t.database.db.selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
/** What the provider itself holds at a home-relative path. */
async function stored(computerId: string, path: string): Promise<string | null> {
  const { provider, ref } = await machineFor(t, (await computer(computerId)) as Computer);
  try {
    return new TextDecoder().decode(await provider.readFile(ref, path, { maxBytes: 1 << 20 }));
  } catch {
    return null;
  }
}
const audits = (action: string) =>
  t.database.db.selectFrom("audit_events").selectAll().where("action", "=", action).orderBy("id").execute();

describe("paths", () => {
  it("start in bots/<bot id>/ on a Team Computer; shared/ and bots/ name the team home", async () => {
    const { bot, s } = team;
    expectStatus(await robot.write(s, "notes.txt", "mine"), 204);
    expect(await stored(bot.computerId, `bots/${bot.id}/notes.txt`)).toBe("mine");
    expectStatus(await robot.write(s, "shared/board.txt", "for everyone"), 204);
    expect(await stored(bot.computerId, "shared/board.txt")).toBe("for everyone");
    expect((await robot.read(s, `bots/${bot.id}/notes.txt`)).text).toBe("mine");
    expect((await robot.read(s, "./notes.txt")).text).toBe("mine");

    const listed = expectStatus(await robot.list(s), 200).json;
    expect(listed.path).toBe(`bots/${bot.id}`);
    const names = listed.items.map((entry: { name: string }) => entry.name);
    expect(names).toContain("notes.txt");
    const entry = listed.items.find((item: { name: string }) => item.name === "notes.txt");
    // A listed path passed back reaches the same file.
    expect((await robot.read(s, entry.path)).text).toBe("mine");
    expect(expectStatus(await robot.list(s, "shared"), 200).json.items).toEqual([
      expect.objectContaining({ name: "board.txt", path: "shared/board.txt", type: "file" }),
    ]);
  });

  it("are the home itself on a Private Computer, which holds nothing of the team's", async () => {
    const { bot, s } = priv;
    expectStatus(await robot.write(s, "diary.txt", "private"), 204);
    expect(await stored(bot.computerId, "diary.txt")).toBe("private");
    expect(expectStatus(await robot.list(s), 200).json.path).toBe("");
    problem(await robot.read(s, "shared/board.txt"), 404, "FILE_NOT_FOUND");
  });

  it("never leave the home", async () => {
    for (const path of [
      "../x",
      "/etc/passwd",
      "a/../../x",
      "a\\b",
      `../../team-${w.workspaceId}/shared/board.txt`,
    ]) {
      problem(await robot.read(team.s, path), 400, "PATH_OUTSIDE_HOME");
      problem(await robot.write(priv.s, path, "x"), 400, "PATH_OUTSIDE_HOME");
    }
    problem(
      await robot.shell(team.s, { command: "pwd", cwd: "../.." }).then((r) => r.response),
      400,
      "PATH_OUTSIDE_HOME",
    );
  });
});

describe("files", () => {
  it("are written, read, listed and deleted, changes audited with the fence", async () => {
    const { s } = team;
    expectStatus(await robot.write(s, "deep/er/file.txt", "x"), 204);
    expect(expectStatus(await robot.list(s, "deep/er"), 200).json.items).toHaveLength(1);
    expectStatus(await robot.tool(s, "DELETE", "/files?path=deep"), 204);
    problem(await robot.read(s, "deep/er/file.txt"), 404, "FILE_NOT_FOUND");
    problem(await robot.tool(s, "DELETE", "/files?path="), 400, "VALIDATION_FAILED");
    problem(await robot.list(s, "notes.txt"), 400, "NOT_A_DIRECTORY");

    const written = (await audits("session.file_written")).at(-1);
    expect(written?.data).toMatchObject({ fence: s.fence, botId: team.bot.id, bytes: 1 });
    expect(written).toMatchObject({ actor_type: "api_key", target_type: "session", target_id: s.sessionId });
    expect((await audits("session.file_deleted")).at(-1)?.data).toMatchObject({
      path: `bots/${team.bot.id}/deep`,
    });
  });

  it("carry bytes as they are, executable when asked", async () => {
    const bytes = new Uint8Array([0, 255, 1, 128, 10]);
    const put = await robot.raw(team.s, "PUT", "/files/content?path=bin.dat&executable=true", {
      body: bytes,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(put.status).toBe(204);
    const got = await robot.raw(team.s, "GET", "/files/content?path=bin.dat");
    expect(got.headers.get("content-type")).toBe("application/octet-stream");
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes);
    const entry = expectStatus(await robot.list(team.s), 200).json.items.find(
      (item: { name: string }) => item.name === "bin.dat",
    );
    expect(entry).toMatchObject({ executable: true, size: 5 });
  });

  it("refuse a body over the limit", async () => {
    const big = new Uint8Array(32 * 1024 * 1024 + 1);
    const put = await robot.raw(team.s, "PUT", "/files/content?path=big.bin", { body: big });
    expect(put.status).toBe(413);
    expect(await put.json()).toMatchObject({ code: "BODY_TOO_LARGE" });
    problem(await robot.read(team.s, "big.bin"), 404, "FILE_NOT_FOUND");
  });

  it("download a folder as a tar and upload one into a folder", async () => {
    const { s } = team;
    expectStatus(await robot.write(s, "pack/a.txt", "A"), 204);
    expectStatus(await robot.write(s, "pack/sub/b.txt", "B"), 204);
    const download = await robot.raw(s, "GET", "/files/archive?path=pack");
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/x-tar");
    const entries = await untar(download.body as ReadableStream<Uint8Array>);
    expect(entries.get("a.txt")).toBe("A");
    expect(entries.get("sub/b.txt")).toBe("B");
    expect([...entries.keys()].some((name) => name.includes("notes.txt"))).toBe(false);
    problem(await robot.tool(s, "GET", "/files/archive?path=missing"), 404, "FILE_NOT_FOUND");

    const upload = await robot.raw(s, "POST", "/files/archive?path=shared/unpacked", {
      body: await tar({ "one.txt": "1", "two/three.txt": "3" }),
      headers: { "content-type": "application/x-tar" },
    });
    expect(upload.status).toBe(200);
    expect(await upload.json()).toEqual({ files: 2, bytes: 2, skipped: 0 });
    expect(await stored(team.bot.computerId, "shared/unpacked/two/three.txt")).toBe("3");
    const climbing = await robot.raw(s, "POST", "/files/archive?path=up", {
      body: await tar({ "../../evil": "x" }),
    });
    expect(climbing.status).toBe(400);
    expect(await climbing.json()).toMatchObject({ code: "PATH_OUTSIDE_HOME" });
    const garbage = await robot.raw(s, "POST", "/files/archive?path=up", {
      body: "not a tar archive at all".repeat(40),
    });
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({ code: "INVALID_ARCHIVE" });
  });

  it("refuses an archive as a whole: nothing of a refused upload is written", async () => {
    const { s } = team;
    const escaping = await robot.raw(s, "POST", "/files/archive?path=whole", {
      body: await tar({ "first.txt": "1", "then/second.txt": "2", "../../evil": "x" }),
    });
    expect(escaping.status).toBe(400);
    expect(await escaping.json()).toMatchObject({ code: "PATH_OUTSIDE_HOME" });
    const oversized = await robot.raw(s, "POST", "/files/archive?path=whole", {
      body: await tar({ "first.txt": "1", "huge.bin": "x".repeat(32 * 1024 * 1024 + 1) }),
    });
    expect(oversized.status).toBe(413);
    const complete = await tar({ "first.txt": "1", "then/second.txt": "2" });
    const cutShort = await robot.raw(s, "POST", "/files/archive?path=whole", {
      // the second member's header is there, its content and the end-of-archive blocks are not
      body: complete.subarray(0, 512 + 512 + 512 + 1),
    });
    expect(cutShort.status).toBe(400);
    expect(await cutShort.json()).toMatchObject({ code: "INVALID_ARCHIVE" });
    expect(await stored(team.bot.computerId, `bots/${team.bot.id}/whole/first.txt`)).toBeNull();
    expect(await stored(team.bot.computerId, `bots/${team.bot.id}/whole/then/second.txt`)).toBeNull();
    const uploads = await audits("session.files_uploaded");
    expect(uploads.filter((event) => (event.data as { path?: string }).path === "whole")).toEqual([]);
  });
});

describe("shell", () => {
  it("streams the command's events as NDJSON, in the start folder, on the session's display", async () => {
    const { response, events, stdout, exit } = await robot.shell(team.s, {
      command: 'pwd; echo "[$DISPLAY] [$GREETING]"; echo oops >&2; exit 3',
      env: { GREETING: "hello" },
    });
    expect(response.status).toBe(200);
    expect(stdout).toBe(
      `/home/team-${w.workspaceId}/bots/${team.bot.id}\n[:${(team.s.screen ?? 0) + 1}] [hello]\n`,
    );
    expect(events).toContainEqual({ type: "stderr", data: "oops\n" });
    expect(exit).toMatchObject({ type: "exit", code: 3 });
    expect(events.at(-1)).toEqual(exit);
    const audit = (await audits("session.shell")).at(-1);
    expect(audit?.data).toMatchObject({ fence: team.s.fence, cwd: `bots/${team.bot.id}`, timeoutMs: 5_000 });

    expect((await robot.shell(team.s, { command: "pwd", cwd: "shared" })).stdout).toBe(
      `/home/team-${w.workspaceId}/shared\n`,
    );
    expect((await robot.shell(priv.s, { command: "pwd" })).stdout).toBe(`/home/${priv.bot.id}\n`);
  });

  it("times out at the default or the caller's bound, which has a maximum", async () => {
    const quick = await robot.shell(team.s, { command: "sleep 5", timeoutMs: 200 });
    expect(quick.exit).toMatchObject({ code: 124, message: "command timed out after 200 ms" });
    problem(
      await robot.shell(team.s, { command: "true", timeoutMs: 3_600_001 }).then((r) => r.response),
      400,
      "VALIDATION_FAILED",
    );
    problem(await robot.shell(team.s, { command: "" }).then((r) => r.response), 400, "VALIDATION_FAILED");
    problem(
      await robot.shell(team.s, { command: "true", cwd: "nowhere" }).then((r) => r.response),
      404,
      "FILE_NOT_FOUND",
    );
  });

  it("answers a quiet command's headers at once and kills it when the caller goes away", async () => {
    const started = Date.now();
    const response = await robot.raw(team.s, "POST", "/shell", {
      body: JSON.stringify({ command: "sleep 3; echo done > late.txt" }),
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_500);
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    problem(await robot.read(team.s, "late.txt"), 404, "FILE_NOT_FOUND");
  });
});

describe("screens", () => {
  it("observe answers the PNG with its size, cursor and screen in headers", async () => {
    const shot = await robot.raw(team.s, "POST", "/observe");
    expect(shot.status).toBe(200);
    expect(shot.headers.get("content-type")).toBe("image/png");
    expect(shot.headers.get("x-width")).toBe("1280");
    expect(shot.headers.get("x-height")).toBe("800");
    expect(shot.headers.get("x-screen")).toBe(String(team.s.screen));
    const png = new Uint8Array(await shot.arrayBuffer());
    expect([...png.subarray(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it("act runs a valid batch in order and refuses an invalid one whole", async () => {
    const done = expectStatus(
      await robot.tool(team.s, "POST", "/act", {
        actions: [
          { type: "move", x: 10, y: 20 },
          { type: "type", text: "hi" },
        ],
      }),
      200,
    ).json;
    expect(done).toEqual({ completed: 2, total: 2 });
    const shot = await robot.raw(team.s, "POST", "/observe");
    expect([shot.headers.get("x-cursor-x"), shot.headers.get("x-cursor-y")]).toEqual(["10", "20"]);
    problem(
      await robot.tool(team.s, "POST", "/act", { actions: [{ type: "move", x: 1, y: 1 }, { type: "fly" }] }),
      400,
      "INVALID_ACTIONS",
    );
    problem(await robot.tool(team.s, "POST", "/act", { actions: [] }), 400, "INVALID_ACTIONS");
    expect((await audits("session.acted")).at(-1)?.data).toMatchObject({
      actions: ["move", "type"],
      completed: 2,
    });
  });

  it("launch-app and open-path report a computer that cannot start the app", async () => {
    // The fake computer has no programs: what matters here is that the failure is reported.
    problem(await robot.tool(team.s, "POST", "/launch-app", { app: "terminal" }), 502, "APP_LAUNCH_FAILED");
    problem(await robot.tool(team.s, "POST", "/open-path", { path: "notes.txt" }), 502, "APP_LAUNCH_FAILED");
    problem(await robot.tool(team.s, "POST", "/open-path", { path: "missing.txt" }), 404, "FILE_NOT_FOUND");
    problem(await robot.tool(team.s, "POST", "/launch-app", { app: "solitaire" }), 400, "VALIDATION_FAILED");
    problem(
      await robot.tool(team.s, "POST", "/launch-app", { app: "browser", url: "javascript:alert(1)" }),
      400,
      "VALIDATION_FAILED",
    );
  });
});

async function untar(body: ReadableStream<Uint8Array>): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const parser = extract();
  Readable.fromWeb(body as NodeReadableStream<Uint8Array>).pipe(parser);
  for await (const entry of parser) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    if (entry.header.type === "file") files.set(entry.header.name, Buffer.concat(chunks).toString());
  }
  return files;
}

async function tar(files: Record<string, string>): Promise<Uint8Array> {
  const archive = pack();
  for (const [name, content] of Object.entries(files)) archive.entry({ name }, content);
  archive.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of archive) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
