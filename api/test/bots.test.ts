import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureRunning } from "../src/computers/lifecycle.ts";
import { expectStatus, type RawResponse, startTestApi, type TestApi } from "../testing/harness.ts";
import { buildWorld, type World } from "../testing/world.ts";

let t: TestApi;
let w: World;
let adminKey: string;

beforeAll(async () => {
  t = await startTestApi();
  w = await buildWorld(t, "bots");
  adminKey = expectStatus(
    await w.people.owner.post(`/v1/workspaces/${w.workspaceId}/api-keys`, {
      name: "bots-admin",
      role: "admin",
    }),
    201,
  ).json.key;
});
afterAll(() => t?.close());

const db = () => t.database.db;
const bots = (rest = "", workspaceId = w.workspaceId) => `/v1/workspaces/${workspaceId}/bots${rest}`;
const charter = { purpose: "files the invoices", boundary: "never pays anything" };
let seq = 0;
const unique = (prefix: string) => `${prefix} ${++seq}`;

function problem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 300)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
  return response.json;
}

async function createBot(body: Record<string, unknown> = {}) {
  return expectStatus(await w.people.admin.post(bots(), { name: unique("Bot"), charter, ...body }), 201).json;
}

const botRow = (id: string) =>
  db().selectFrom("bots").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
const botCount = async () =>
  Number(
    (
      await db()
        .selectFrom("bots")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("workspace_id", "=", w.workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );
const audits = (action: string, botId: string) =>
  db()
    .selectFrom("audit_events")
    .selectAll()
    .where("action", "=", action)
    .where("target_id", "=", botId)
    .orderBy("id")
    .execute();
const computerRow = (id: string) =>
  db().selectFrom("computers").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

/** An open session of the bot, made behind the API's back (sessions are not this file's subject). */
async function openSession(bot: { id: string; computerId: string }, expiresInMs = 60_000) {
  return db()
    .insertInto("execution_leases")
    .values({
      workspace_id: w.workspaceId,
      computer_id: bot.computerId,
      bot_id: bot.id,
      holder_type: "user",
      holder_id: w.people.member.userId,
      expires_at: new Date(Date.now() + expiresInMs),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
const endSession = (id: string) =>
  db()
    .updateTable("execution_leases")
    .set({ status: "ended", outcome: "success", ended_at: new Date() })
    .where("id", "=", id)
    .execute();

describe("creating bots", () => {
  it("puts a new bot on the Team Computer, audited with its creator", async () => {
    const name = unique("Invoice bot");
    const created = expectStatus(
      await w.people.admin.post(bots(), { name: `  ${name} `, charter }),
      201,
    ).json;
    expect(created).toMatchObject({
      id: expect.any(String),
      workspaceId: w.workspaceId,
      name,
      charter: { ...charter, privacyReason: "" },
      computerMode: "team",
      computerId: expect.any(String),
      status: "idle",
      session: null,
      archivedAt: null,
      createdBy: w.people.admin.userId,
    });
    const computer = await computerRow(created.computerId);
    expect(computer).toMatchObject({
      scope_key: `team:${w.workspaceId}`,
      home_key: `team-${w.workspaceId}`,
      bot_id: null,
      state: "stopped",
      provider_ref: null,
    });
    // Every Team bot names the same computer.
    expect((await createBot()).computerId).toBe(created.computerId);
    const [audit] = await audits("bot.created", created.id);
    expect(audit).toMatchObject({
      actor_type: "user",
      actor_id: w.people.admin.userId,
      workspace_id: w.workspaceId,
      data: { name, computerMode: "team" },
    });
    expect(expectStatus(await w.people.viewer.get(bots(`/${created.id}`)), 200).json).toEqual(created);
  });

  it("gives a Private bot its own computer, whose home key is the bot id", async () => {
    const created = await createBot({
      computerMode: "private",
      charter: { ...charter, privacyReason: "handles payroll" },
    });
    expect(created).toMatchObject({ computerMode: "private", charter: { privacyReason: "handles payroll" } });
    expect(await computerRow(created.computerId)).toMatchObject({
      scope_key: `bot:${created.id}`,
      home_key: created.id,
      bot_id: created.id,
      state: "stopped",
    });
  });

  it("may be done with an admin's API key", async () => {
    const created = expectStatus(
      await t.client().post(bots(), { name: unique("Keyed"), charter }, { apiKey: adminKey }),
      201,
    ).json;
    expect(created.createdBy).toBeNull();
    expect((await audits("bot.created", created.id))[0]).toMatchObject({ actor_type: "api_key" });
  });

  it("refuses bad input with problem JSON, and makes nothing", async () => {
    const before = await botCount();
    const cases: [unknown, string][] = [
      [{ name: "Private", charter, computerMode: "private" }, "json.charter.privacyReason"],
      [
        { name: "Private", charter: { ...charter, privacyReason: "   " }, computerMode: "private" },
        "json.charter.privacyReason",
      ],
      [{ name: "", charter }, "json.name"],
      [{ name: "   ", charter }, "json.name"],
      [{ name: "Bell\u0007", charter }, "json.name"],
      [{ name: "x".repeat(101), charter }, "json.name"],
      [{ name: "No purpose", charter: { boundary: "b" } }, "json.charter.purpose"],
      [{ name: "Empty boundary", charter: { purpose: "p", boundary: " " } }, "json.charter.boundary"],
      [{ name: "Long", charter: { ...charter, purpose: "p".repeat(2_001) } }, "json.charter.purpose"],
      [{ name: "Mode", charter, computerMode: "shared" }, "json.computerMode"],
      [{ charter }, "json.name"],
      [{ name: "No charter" }, "json.charter"],
    ];
    for (const [body, path] of cases) {
      const refused = problem(await w.people.admin.post(bots(), body), 400, "VALIDATION_FAILED");
      expect(
        refused.errors.map((e: { path: string }) => e.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    problem(await w.people.admin.post(bots(), "{not json"), 400, "MALFORMED_REQUEST");
    expect(await botCount()).toBe(before);
  });

  it("keeps names unique among live bots, in any letter case", async () => {
    const first = await createBot({ name: "Unique Name" });
    const before = await botCount();
    const taken = problem(
      await w.people.admin.post(bots(), { name: "unique name", charter }),
      409,
      "BOT_NAME_TAKEN",
    );
    expect(taken.detail).toContain("unique name");
    expect(await botCount()).toBe(before);
    // Another workspace may use it.
    expectStatus(
      await w.people.outsider.post(bots("", w.otherWorkspaceId), { name: "Unique Name", charter }),
      201,
    );
    // Archiving frees the name.
    expectStatus(await w.people.admin.post(bots(`/${first.id}/archive`)), 200);
    expectStatus(await w.people.admin.post(bots(), { name: "UNIQUE NAME", charter }), 201);
  });

  it("lets exactly one of two same-named creations through", async () => {
    const body = { name: unique("Racer"), charter };
    const [a, b] = await Promise.all([w.people.admin.post(bots(), body), w.people.owner.post(bots(), body)]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect((a.status === 409 ? a : b).json).toMatchObject({ code: "BOT_NAME_TAKEN" });
  });
});

describe("reading bots", () => {
  it("lists live bots by name for every member; archived ones on request", async () => {
    const archived = await createBot({ name: unique("Zz archived") });
    expectStatus(await w.people.admin.post(bots(`/${archived.id}/archive`)), 200);
    const live = await createBot({ name: unique("Aa live") });

    const listed = expectStatus(await w.people.viewer.get(bots()), 200).json.items;
    const names = listed.map((bot: { name: string }) => bot.name);
    expect(names).toEqual(
      [...names].sort((x: string, y: string) => x.toLowerCase().localeCompare(y.toLowerCase())),
    );
    expect(listed).toContainEqual(expect.objectContaining({ id: live.id, status: "idle" }));
    expect(listed.map((bot: { id: string }) => bot.id)).not.toContain(archived.id);
    for (const bot of listed) expect(bot.status).not.toBe("archived");

    const all = expectStatus(await w.people.viewer.get(bots("?includeArchived=true")), 200).json.items;
    expect(all).toContainEqual(
      expect.objectContaining({ id: archived.id, status: "archived", archivedAt: expect.any(String) }),
    );
    problem(await w.people.viewer.get(bots("?includeArchived=yes")), 400, "VALIDATION_FAILED");
    // An archived bot can still be read by id.
    expect(expectStatus(await w.people.viewer.get(bots(`/${archived.id}`)), 200).json.status).toBe(
      "archived",
    );
  });

  it("answers another workspace's bot exactly like a missing one", async () => {
    const bot = await createBot();
    const theirs = problem(
      await w.people.outsider.get(bots(`/${bot.id}`, w.otherWorkspaceId)),
      404,
      "BOT_NOT_FOUND",
    );
    const missing = problem(
      await w.people.outsider.get(bots("/no-such-bot", w.otherWorkspaceId)),
      404,
      "BOT_NOT_FOUND",
    );
    expect(theirs.detail).toBe(missing.detail);
    problem(await w.people.outsider.get(bots(`/${bot.id}`)), 404, "WORKSPACE_NOT_FOUND");
    problem(
      await w.people.outsider.post(bots(`/${bot.id}/archive`, w.otherWorkspaceId)),
      404,
      "BOT_NOT_FOUND",
    );
    expect((await botRow(bot.id)).archived_at).toBeNull();
  });

  it("shows the open session of a busy bot", async () => {
    const bot = await createBot();
    const session = await openSession(bot);
    const read = expectStatus(await w.people.viewer.get(bots(`/${bot.id}`)), 200).json;
    expect(read).toMatchObject({
      status: "busy",
      session: {
        id: session.id,
        fence: session.fence,
        computerId: bot.computerId,
        holder: { type: "user", id: w.people.member.userId },
      },
    });
    const listed = expectStatus(await w.people.viewer.get(bots()), 200).json.items;
    expect(listed).toContainEqual(expect.objectContaining({ id: bot.id, status: "busy" }));
    await endSession(session.id);
    expect(expectStatus(await w.people.viewer.get(bots(`/${bot.id}`)), 200).json).toMatchObject({
      status: "idle",
      session: null,
    });
  });
});

describe("updating bots", () => {
  it("renames and changes the charter, keeping fields not sent, audited", async () => {
    const bot = await createBot();
    const name = unique("Renamed");
    const updated = expectStatus(
      await w.people.owner.patch(bots(`/${bot.id}`), { name, charter: { boundary: "never emails anyone" } }),
      200,
    ).json;
    expect(updated).toMatchObject({
      name,
      charter: { purpose: charter.purpose, boundary: "never emails anyone", privacyReason: "" },
    });
    expect(new Date(updated.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(bot.updatedAt).getTime());
    expect((await audits("bot.updated", bot.id)).map((row) => row.data)).toEqual([
      { name, changed: ["name", "charter_boundary"], previousName: bot.name },
    ]);
    // The same values again change nothing and record nothing.
    expectStatus(await w.people.owner.patch(bots(`/${bot.id}`), { name }), 200);
    expect(await audits("bot.updated", bot.id)).toHaveLength(1);
  });

  it("refuses bad input and taken names, losing nothing", async () => {
    const other = await createBot();
    const bot = await createBot({
      computerMode: "private",
      charter: { ...charter, privacyReason: "secrets" },
    });
    const before = await botRow(bot.id);
    const path = bots(`/${bot.id}`);
    problem(await w.people.admin.patch(path, {}), 400, "VALIDATION_FAILED");
    problem(await w.people.admin.patch(path, { name: "" }), 400, "VALIDATION_FAILED");
    problem(
      await w.people.admin.patch(path, { name: "ok", charter: { purpose: " " } }),
      400,
      "VALIDATION_FAILED",
    );
    const reason = problem(
      await w.people.admin.patch(path, { name: "ok", charter: { privacyReason: "" } }),
      400,
      "VALIDATION_FAILED",
    );
    expect(reason.errors).toEqual([{ path: "json.charter.privacyReason", message: expect.any(String) }]);
    problem(await w.people.admin.patch(path, { name: other.name.toUpperCase() }), 409, "BOT_NAME_TAKEN");
    expect(await botRow(bot.id)).toEqual(before);
    expect(await audits("bot.updated", bot.id)).toHaveLength(0);
  });
});

describe("archiving bots", () => {
  it("retires a bot, keeps its computer, and refuses further changes", async () => {
    const bot = await createBot({
      computerMode: "private",
      charter: { ...charter, privacyReason: "secrets" },
    });
    const archived = expectStatus(await w.people.admin.post(bots(`/${bot.id}/archive`)), 200).json;
    expect(archived).toMatchObject({ status: "archived", computerId: bot.computerId });
    expect(await computerRow(bot.computerId)).toMatchObject({ bot_id: bot.id });
    expect((await audits("bot.archived", bot.id)).map((row) => [row.actor_id, row.data])).toEqual([
      [w.people.admin.userId, { name: bot.name, computerMode: "private" }],
    ]);
    // Again: nothing changes, nothing is recorded.
    expect(expectStatus(await w.people.admin.post(bots(`/${bot.id}/archive`)), 200).json).toEqual(archived);
    expect(await audits("bot.archived", bot.id)).toHaveLength(1);
    problem(await w.people.admin.patch(bots(`/${bot.id}`), { name: unique("x") }), 409, "BOT_ARCHIVED");
    problem(
      await w.people.admin.post(bots(`/${bot.id}/mode`), { computerMode: "team" }),
      409,
      "BOT_ARCHIVED",
    );
    expect((await botRow(bot.id)).computer_mode).toBe("private");
  });

  it("is refused while the bot has an open session", async () => {
    const bot = await createBot();
    const session = await openSession(bot);
    const busy = problem(await w.people.admin.post(bots(`/${bot.id}/archive`)), 409, "BOT_BUSY");
    expect(busy.detail).toContain(session.id);
    expect((await botRow(bot.id)).archived_at).toBeNull();
    await endSession(session.id);
    expectStatus(await w.people.admin.post(bots(`/${bot.id}/archive`)), 200);
  });
});

describe("switching between Team and Private", () => {
  const mode = (botId: string, body: Record<string, unknown>) =>
    w.people.admin.post(bots(`/${botId}/mode`), body);

  it("moves a bot to its own computer and back, audited, deleting nothing", async () => {
    const bot = await createBot();
    const teamComputerId = bot.computerId;
    problem(await mode(bot.id, { computerMode: "private" }), 400, "VALIDATION_FAILED");
    problem(await mode(bot.id, { computerMode: "solo" }), 400, "VALIDATION_FAILED");
    expect((await botRow(bot.id)).computer_mode).toBe("team");

    const toPrivate = expectStatus(
      await mode(bot.id, { computerMode: "private", privacyReason: "reads HR files" }),
      200,
    ).json;
    expect(toPrivate).toMatchObject({
      computerMode: "private",
      charter: { privacyReason: "reads HR files" },
    });
    expect(toPrivate.computerId).not.toBe(teamComputerId);
    expect(await computerRow(toPrivate.computerId)).toMatchObject({ home_key: bot.id, bot_id: bot.id });

    const toTeam = expectStatus(await mode(bot.id, { computerMode: "team" }), 200).json;
    expect(toTeam).toMatchObject({ computerMode: "team", computerId: teamComputerId });
    // The reason stays in the charter, and the private computer stays.
    expect(toTeam.charter.privacyReason).toBe("reads HR files");
    expect(await computerRow(toPrivate.computerId)).toMatchObject({ home_key: bot.id });

    // Back again without a new reason: the kept one counts. Same computer as before.
    const back = expectStatus(await mode(bot.id, { computerMode: "private" }), 200).json;
    expect(back.computerId).toBe(toPrivate.computerId);
    // Already there: nothing happens.
    expectStatus(await mode(bot.id, { computerMode: "private" }), 200);

    expect((await audits("bot.mode_switched", bot.id)).map((row) => [row.actor_id, row.data])).toEqual([
      [
        w.people.admin.userId,
        { name: bot.name, from: "team", to: "private", computerId: toPrivate.computerId },
      ],
      [w.people.admin.userId, { name: bot.name, from: "private", to: "team", computerId: teamComputerId }],
      [
        w.people.admin.userId,
        { name: bot.name, from: "team", to: "private", computerId: toPrivate.computerId },
      ],
    ]);
  });

  it("is refused while the bot has an open session or holds a screen, and allowed after", async () => {
    const bot = await createBot();
    const session = await openSession(bot);
    const busy = problem(
      await mode(bot.id, { computerMode: "private", privacyReason: "r" }),
      409,
      "BOT_BUSY",
    );
    expect(busy.detail).toContain(session.id);
    expect(await botRow(bot.id)).toMatchObject({ computer_mode: "team", charter_privacy_reason: "" });
    expect(await audits("bot.mode_switched", bot.id)).toHaveLength(0);

    // An open lease past its expiry no longer counts.
    await db()
      .updateTable("execution_leases")
      .set({ expires_at: new Date(Date.now() - 1_000) })
      .where("id", "=", session.id)
      .execute();
    expectStatus(await mode(bot.id, { computerMode: "private", privacyReason: "r" }), 200);
    await endSession(session.id);

    // A live screen lease counts too.
    const privateComputerId = expectStatus(await w.people.viewer.get(bots(`/${bot.id}`)), 200).json
      .computerId;
    const screen = await db()
      .insertInto("screen_leases")
      .values({
        workspace_id: w.workspaceId,
        computer_id: privateComputerId,
        bot_id: bot.id,
        screen_index: 0,
        expires_at: new Date(Date.now() + 60_000),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    problem(await mode(bot.id, { computerMode: "team" }), 409, "BOT_BUSY");
    await db()
      .updateTable("screen_leases")
      .set({ released_at: new Date() })
      .where("id", "=", screen.id)
      .execute();
    expectStatus(await mode(bot.id, { computerMode: "team" }), 200);
  });

  it("keeps a Private bot's files through Private → Team → Private", async () => {
    const bot = await createBot({
      computerMode: "private",
      charter: { ...charter, privacyReason: "secrets" },
    });
    const computer = await computerRow(bot.computerId);
    const actor = { type: "system" as const, id: null, label: "test" };
    const { machine } = await ensureRunning(t.api.deps, computer, actor);
    await machine.provider.writeFile(machine.ref, "notes/secret.txt", new TextEncoder().encode("kept"));

    expectStatus(await mode(bot.id, { computerMode: "team" }), 200);
    const back = expectStatus(await mode(bot.id, { computerMode: "private" }), 200).json;
    expect(back.computerId).toBe(bot.computerId);
    const again = await ensureRunning(t.api.deps, await computerRow(back.computerId), actor);
    const read = await again.machine.provider.readFile(again.machine.ref, "notes/secret.txt", {
      maxBytes: 100,
    });
    expect(new TextDecoder().decode(read)).toBe("kept");
    // The Team Computer's home is another one.
    const team = await ensureRunning(t.api.deps, await computerRow((await createBot()).computerId), actor);
    await expect(
      team.machine.provider.readFile(team.machine.ref, "notes/secret.txt", { maxBytes: 100 }),
    ).rejects.toMatchObject({ code: "FILE_NOT_FOUND" });
  });
});
