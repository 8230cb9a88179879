import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  expectStatus,
  type RawResponse,
  startTestApi,
  type TestApi,
  type TestClient,
} from "../testing/harness.ts";
import { createBot, problem, SessionClient, shellResult } from "../testing/sessions.ts";
import { buildWorld, type World } from "../testing/world.ts";

/**
 * People's computer tools (shell and files on the whole home, no session) on the fake provider:
 * what they reach on a Team Computer, who may call which, and what they refuse.
 */
let t: TestApi;
let w: World;
let memberKey: string;
let adminKey: string;
let teamBot: { id: string; computerId: string };
/** The Team Computer, running. */
let team: string;

beforeAll(async () => {
  t = await startTestApi({ SANDBOX_COMMAND_TIMEOUT_MS: "5000" });
  w = await buildWorld(t, "computer-tools");
  const key = async (role: "member" | "admin") =>
    expectStatus(
      await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, { name: role, role }),
      201,
    ).json.key as string;
  memberKey = await key("member");
  adminKey = await key("admin");
  teamBot = await createBot(w.people.admin, w.workspaceId);
  team = teamBot.computerId;
  expectStatus(await w.people.admin.post(`${base(team)}/start`), 200);
});
afterAll(() => t?.close());

const base = (computerId: string, workspaceId = w.workspaceId) =>
  `/v1/workspaces/${workspaceId}/computers/${computerId}`;
const at = (path: string) => `?path=${encodeURIComponent(path)}`;
const bytes = (text: string) => new TextEncoder().encode(text);

const list = (who: TestClient, path = "", computerId = team) =>
  who.get(`${base(computerId)}/files${at(path)}`);
const read = (who: TestClient, path: string, computerId = team) =>
  who.get(`${base(computerId)}/files/content${at(path)}`);
const write = (who: TestClient, path: string, body: Uint8Array, computerId = team) =>
  who.fetch("PUT", `${base(computerId)}/files/content${at(path)}`, {
    body,
    headers: { "content-type": "application/octet-stream" },
  });
const remove = (who: TestClient, path: string, computerId = team) =>
  who.delete(`${base(computerId)}/files${at(path)}`);
async function shell(who: TestClient, body: Record<string, unknown>, computerId = team) {
  const response = await who.post(`${base(computerId)}/shell`, body);
  return { response, ...shellResult(response) };
}
/** A Response as the harness's RawResponse, for problem(). */
async function raw(response: Response): Promise<RawResponse> {
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : null };
}

const audits = (action: string, computerId = team) =>
  t.database.db
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", computerId)
    .orderBy("id")
    .execute();
const computerRow = (id: string) =>
  t.database.db.selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

describe("files", () => {
  it("are written, listed, read back byte for byte and deleted, changes audited", async () => {
    const content = new Uint8Array([0, 255, 1, 128, 10, 13, 0]);
    expect((await write(w.people.admin, "shared/report.bin", content)).status).toBe(204);

    const listed = expectStatus(await list(w.people.member, "shared"), 200).json;
    expect(listed.path).toBe("shared");
    expect(listed.items).toContainEqual(
      expect.objectContaining({ name: "report.bin", path: "shared/report.bin", type: "file", size: 7 }),
    );
    const got = await w.people.member.fetch("GET", `${base(team)}/files/content${at("shared/report.bin")}`);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("application/octet-stream");
    expect(got.headers.get("content-disposition")).toBe(
      `attachment; filename="report.bin"; filename*=UTF-8''report.bin`,
    );
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(content);

    const written = (await audits("computer.file_written")).at(-1);
    expect(written).toMatchObject({
      actor_type: "user",
      actor_id: w.people.admin.userId,
      workspace_id: w.workspaceId,
      target_type: "computer",
    });
    expect(written?.data).toEqual({ path: "shared/report.bin", bytes: 7, executable: false });

    expectStatus(await remove(w.people.admin, "shared/report.bin"), 204);
    problem(await read(w.people.member, "shared/report.bin"), 404, "FILE_NOT_FOUND");
    expect((await audits("computer.file_deleted")).at(-1)).toMatchObject({
      actor_id: w.people.admin.userId,
      data: { path: "shared/report.bin" },
    });
  });

  it("reach the whole team home: the bots' folders and shared/", async () => {
    const robot = new SessionClient({ client: t.client(), apiKey: memberKey }, w.workspaceId);
    const session = await robot.opened(teamBot.id);
    expectStatus(await robot.write(session, "notes.txt", "the bot's"), 204);
    expectStatus(await robot.end(session), 200);

    const names = expectStatus(await list(w.people.member), 200).json.items.map(
      (item: { name: string }) => item.name,
    );
    expect(names).toEqual(expect.arrayContaining(["bots", "shared"]));
    expect(expectStatus(await read(w.people.member, `bots/${teamBot.id}/notes.txt`), 200).text).toBe(
      "the bot's",
    );
    // And the other way: what a person puts in the bot's folder, the bot finds in its start folder.
    expect(
      (await write(w.people.owner, `bots/${teamBot.id}/for-you.txt`, bytes("from a person"))).status,
    ).toBe(204);
    const next = await robot.opened(teamBot.id);
    expect(expectStatus(await robot.read(next, "for-you.txt"), 200).text).toBe("from a person");
    expectStatus(await robot.end(next), 200);
  });

  it("download under the file's own name, however it is spelled", async () => {
    const name = 'ré sumé "final";(1).txt';
    expect((await write(w.people.admin, `shared/${name}`, bytes("cv"))).status).toBe(204);
    const disposition =
      (await read(w.people.member, `shared/${name}`)).headers.get("content-disposition") ?? "";
    const [, fallback] = disposition.match(/filename="([^"]*)"/) ?? [];
    expect(fallback).toBe("r__sum___final___1_.txt");
    const [, encoded = ""] = disposition.match(/filename\*=UTF-8''([^;\s]*)$/) ?? [];
    expect(encoded).not.toMatch(/['()";\s]/);
    expect(decodeURIComponent(encoded)).toBe(name);
  });

  it("write executable files when asked, and refuse a body over the limit", async () => {
    const put = await w.people.admin.fetch("PUT", `${base(team)}/files/content?path=run.sh&executable=true`, {
      body: bytes("echo hi"),
    });
    expect(put.status).toBe(204);
    expect(expectStatus(await list(w.people.member), 200).json.items).toContainEqual(
      expect.objectContaining({ name: "run.sh", executable: true, size: 7 }),
    );

    problem(
      await raw(await write(w.people.admin, "big.bin", new Uint8Array(32 * 1024 * 1024 + 1))),
      413,
      "BODY_TOO_LARGE",
    );
    problem(await read(w.people.member, "big.bin"), 404, "FILE_NOT_FOUND");
  });

  it("count as activity on the computer", async () => {
    await t.database.db
      .updateTable("computers")
      .set({ last_activity_at: null })
      .where("id", "=", team)
      .execute();
    expectStatus(await list(w.people.member), 200);
    expect((await computerRow(team)).last_activity_at).not.toBeNull();
  });
});

describe("shell", () => {
  it("streams the command's events as NDJSON from the team home, audited", async () => {
    const { response, events, stdout, stderr, exit } = await shell(w.people.admin, {
      command: 'pwd; echo "[$GREETING]"; echo oops >&2; exit 3',
      env: { GREETING: "hello" },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(stdout).toBe(`/home/team-${w.workspaceId}\n[hello]\n`);
    expect(stderr).toBe("oops\n");
    expect(exit).toMatchObject({ type: "exit", code: 3 });
    expect(events.at(-1)).toEqual(exit);
    const audit = (await audits("computer.shell")).at(-1);
    expect(audit).toMatchObject({
      actor_type: "user",
      actor_id: w.people.admin.userId,
      target_type: "computer",
    });
    expect(audit?.data).toEqual({
      command: 'pwd; echo "[$GREETING]"; echo oops >&2; exit 3',
      cwd: "",
      timeoutMs: 5_000,
    });

    expect((await shell(w.people.owner, { command: "pwd", cwd: "shared" })).stdout).toBe(
      `/home/team-${w.workspaceId}/shared\n`,
    );
    expect((await audits("computer.shell")).at(-1)?.data).toMatchObject({ cwd: "shared" });
  });

  it("takes the caller's timeout, and refuses bad input as problems", async () => {
    const quick = await shell(w.people.admin, { command: "sleep 5", timeoutMs: 200 });
    expect(quick.exit).toMatchObject({ code: 124, message: "command timed out after 200 ms" });
    const before = (await audits("computer.shell")).length;
    problem((await shell(w.people.admin, { command: "" })).response, 400, "VALIDATION_FAILED");
    problem(
      (await shell(w.people.admin, { command: "true", timeoutMs: 3_600_001 })).response,
      400,
      "VALIDATION_FAILED",
    );
    problem(
      (await shell(w.people.admin, { command: "true", env: { "BAD-NAME": "x" } })).response,
      400,
      "VALIDATION_FAILED",
    );
    problem(
      (await shell(w.people.admin, { command: "true", cwd: "nowhere" })).response,
      404,
      "FILE_NOT_FOUND",
    );
    // Only the command that reached the computer is on record.
    expect((await audits("computer.shell")).length).toBe(before + 1);
  });

  it("is for admins and owners, people or API keys", async () => {
    const asKey = (apiKey: string) =>
      t.client().request("POST", `${base(team)}/shell`, { body: { command: "echo key" }, apiKey });
    const admin = await asKey(adminKey);
    expect(admin.status).toBe(200);
    expect(shellResult(admin).stdout).toBe("key\n");
    expect((await audits("computer.shell")).at(-1)).toMatchObject({ actor_type: "api_key" });

    const before = (await audits("computer.shell")).length;
    problem(await asKey(memberKey), 403, "ROLE_FORBIDDEN");
    problem((await shell(w.people.member, { command: "echo no" })).response, 403, "ROLE_FORBIDDEN");
    problem((await shell(w.people.viewer, { command: "echo no" })).response, 403, "ROLE_FORBIDDEN");
    expect((await audits("computer.shell")).length).toBe(before);
  });
});

describe("access", () => {
  it("lets members read, and only admins and owners change", async () => {
    expect((await write(w.people.owner, "shared/keep.txt", bytes("keep"))).status).toBe(204);
    const writes = (await audits("computer.file_written")).length;
    const deletes = (await audits("computer.file_deleted")).length;

    expect(expectStatus(await read(w.people.member, "shared/keep.txt"), 200).text).toBe("keep");
    const keyRead = await t
      .client()
      .get(`${base(team)}/files/content${at("shared/keep.txt")}`, { apiKey: memberKey });
    expect(expectStatus(keyRead, 200).text).toBe("keep");
    problem(await read(w.people.viewer, "shared/keep.txt"), 403, "ROLE_FORBIDDEN");
    problem(await list(w.people.viewer), 403, "ROLE_FORBIDDEN");

    problem(await raw(await write(w.people.member, "shared/keep.txt", bytes("mine"))), 403, "ROLE_FORBIDDEN");
    problem(await remove(w.people.member, "shared/keep.txt"), 403, "ROLE_FORBIDDEN");
    problem(
      await t.client().request("PUT", `${base(team)}/files/content${at("shared/keep.txt")}`, {
        body: "mine",
        apiKey: memberKey,
        headers: { "content-type": "application/octet-stream" },
      }),
      403,
      "ROLE_FORBIDDEN",
    );
    problem(
      await t.client().delete(`${base(team)}/files${at("shared/keep.txt")}`, { apiKey: memberKey }),
      403,
      "ROLE_FORBIDDEN",
    );
    expect(expectStatus(await read(w.people.member, "shared/keep.txt"), 200).text).toBe("keep");
    expect((await audits("computer.file_written")).length).toBe(writes);
    expect((await audits("computer.file_deleted")).length).toBe(deletes);

    const byKey = await t.client().request("PUT", `${base(team)}/files/content${at("shared/keep.txt")}`, {
      body: "the admin key's",
      apiKey: adminKey,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(byKey.status).toBe(204);
    expect(expectStatus(await read(w.people.member, "shared/keep.txt"), 200).text).toBe("the admin key's");
  });

  it("answers 404 for another workspace's computer, and to outsiders", async () => {
    const theirs = await createBot(w.people.outsider, w.otherWorkspaceId);
    expectStatus(await w.people.outsider.post(`${base(theirs.computerId, w.otherWorkspaceId)}/start`), 200);
    const outsiderWrite = await w.people.outsider.fetch(
      "PUT",
      `${base(theirs.computerId, w.otherWorkspaceId)}/files/content${at("secret.txt")}`,
      { body: bytes("theirs"), headers: { "content-type": "application/octet-stream" } },
    );
    expect(outsiderWrite.status).toBe(204);

    problem(await list(w.people.owner, "", theirs.computerId), 404, "COMPUTER_NOT_FOUND");
    problem(await read(w.people.owner, "secret.txt", theirs.computerId), 404, "COMPUTER_NOT_FOUND");
    problem(await remove(w.people.owner, "secret.txt", theirs.computerId), 404, "COMPUTER_NOT_FOUND");
    problem(
      await raw(await write(w.people.owner, "secret.txt", bytes("x"), theirs.computerId)),
      404,
      "COMPUTER_NOT_FOUND",
    );
    problem(
      (await shell(w.people.owner, { command: "cat secret.txt" }, theirs.computerId)).response,
      404,
      "COMPUTER_NOT_FOUND",
    );
    problem(await list(w.people.outsider), 404, "WORKSPACE_NOT_FOUND");
    problem(
      await w.people.owner.get(`${base(theirs.computerId, w.otherWorkspaceId)}/files`),
      404,
      "WORKSPACE_NOT_FOUND",
    );
  });
});

describe("refusals", () => {
  it("need a running computer, and never start one", async () => {
    const { computerId } = await createBot(w.people.admin, w.workspaceId, "private");
    expectStatus(await w.people.admin.post(`${base(computerId)}/start`), 200);
    expect((await write(w.people.admin, "before-stop.txt", bytes("x"), computerId)).status).toBe(204);
    expectStatus(await w.people.admin.post(`${base(computerId)}/stop`), 200);

    problem(await list(w.people.admin, "", computerId), 409, "MACHINE_STOPPED");
    problem(await read(w.people.admin, "before-stop.txt", computerId), 409, "MACHINE_STOPPED");
    problem(
      await raw(await write(w.people.admin, "after.txt", bytes("x"), computerId)),
      409,
      "MACHINE_STOPPED",
    );
    problem(await remove(w.people.admin, "before-stop.txt", computerId), 409, "MACHINE_STOPPED");
    problem((await shell(w.people.admin, { command: "true" }, computerId)).response, 409, "MACHINE_STOPPED");
    expect((await computerRow(computerId)).state).toBe("stopped");
    expect(await audits("computer.shell", computerId)).toEqual([]);

    expectStatus(await w.people.admin.post(`${base(computerId)}/start`), 200);
    expect(expectStatus(await read(w.people.admin, "before-stop.txt", computerId), 200).text).toBe("x");
    problem(await read(w.people.admin, "after.txt", computerId), 404, "FILE_NOT_FOUND");
  });

  it("keep every path inside the home", async () => {
    for (const path of ["../x", "/etc/passwd", "a/../../x", "a\\b", `../team-${w.workspaceId}/shared`]) {
      problem(await list(w.people.admin, path), 400, "PATH_OUTSIDE_HOME");
      problem(await read(w.people.admin, path), 400, "PATH_OUTSIDE_HOME");
      problem(await raw(await write(w.people.admin, path, bytes("x"))), 400, "PATH_OUTSIDE_HOME");
      problem(await remove(w.people.admin, path), 400, "PATH_OUTSIDE_HOME");
      problem(
        (await shell(w.people.admin, { command: "pwd", cwd: path })).response,
        400,
        "PATH_OUTSIDE_HOME",
      );
    }
    problem(await remove(w.people.admin, "."), 400, "INVALID_PATH");
    problem(await w.people.admin.get(`${base(team)}/files/content`), 400, "VALIDATION_FAILED");
    problem(await w.people.admin.delete(`${base(team)}/files?path=`), 400, "VALIDATION_FAILED");
    problem(await read(w.people.admin, "shared"), 400, "NOT_A_FILE");
  });
});

describe("the OpenAPI document", () => {
  it("describes every computer tool for the web client", async () => {
    const doc = expectStatus(await t.client().get("/openapi.json"), 200).json;
    const path = "/v1/workspaces/{workspaceId}/computers/{computerId}";
    const operations = [
      [`${path}/shell`, "post"],
      [`${path}/files`, "get"],
      [`${path}/files`, "delete"],
      [`${path}/files/content`, "get"],
      [`${path}/files/content`, "put"],
    ] as const;
    for (const [route, method] of operations) {
      const operation = doc.paths[route]?.[method];
      expect(operation, `${method} ${route}`).toMatchObject({
        summary: expect.any(String),
        description: expect.stringContaining("MACHINE_STOPPED"),
        tags: ["Computer tools"],
      });
      expect(operation.responses["409"].content["application/problem+json"]).toBeDefined();
    }
    expect(doc.paths[`${path}/shell`].post.description).toContain("workspace admin or higher");
    expect(doc.paths[`${path}/files`].get.description).toContain("workspace member or higher");
    expect(doc.paths[`${path}/shell`].post.responses["200"].content["application/x-ndjson"].schema).toEqual({
      $ref: "#/components/schemas/ShellEvent",
    });
  });
});
