/**
 * Faults around a real Docker computer: the computer killed under an upload and while idle, the
 * supervisor killed under an upload and a shell command, and the supervisor frozen while a session
 * heartbeats. After each, whatever had to survive is checked: the file's bytes (whole, old or new,
 * never a mix), the home free of upload leftovers, the session, the audit trail, and the api's
 * record of the computer agreeing with Docker.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { destroyMachines } from "@cubicle/api/testing/computers";
import { expectStatus, type TestApi } from "@cubicle/api/testing/harness";
import { createBot, type OpenedSession, problem, SessionClient } from "@cubicle/api/testing/sessions";
import { type SupervisorProcess, startApiOnSupervisor } from "@cubicle/api/testing/supervisor-process";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tally } from "../../src/tally.ts";

const SLOW = 240_000;
/** The largest upload the api takes: big enough that its write into the computer can be caught. */
const UPLOAD_BYTES = 32 * 1024 * 1024;

let supervisor: SupervisorProcess;
let t: TestApi;
let w: World;

beforeAll(async () => {
  ({ supervisor, t } = await startApiOnSupervisor({ SANDBOX_RECONCILE_MS: "1000" }));
  w = await buildWorld(t, "docker-faults");
}, SLOW);

afterAll(async () => {
  if (t) {
    await destroyMachines(t);
    await t.close();
  }
  await supervisor?.remove();
}, SLOW);

const sessions = () => new SessionClient({ client: w.people.owner }, w.workspaceId);
const sha = (text: string) => createHash("sha256").update(text).digest("hex");
/** A file of the upload's full size whose every byte says which version it is. */
const version = (mark: string) => mark.repeat(UPLOAD_BYTES);

async function containerOf(computerId: string): Promise<string> {
  const row = await t.database.db
    .selectFrom("computers")
    .select("provider_ref")
    .where("id", "=", computerId)
    .executeTakeFirstOrThrow();
  if (!row.provider_ref) throw new Error("the computer has no container");
  return row.provider_ref;
}

async function stateOf(computerId: string): Promise<string> {
  return expectStatus(
    await w.people.owner.get(`/v1/workspaces/${w.workspaceId}/computers/${computerId}`),
    200,
  ).json.state;
}

async function auditActions(
  computerId: string,
): Promise<{ action: string; data: Record<string, unknown> }[]> {
  return t.database.db
    .selectFrom("audit_events")
    .select(["action", "data"])
    .where("target_id", "=", computerId)
    .orderBy("id")
    .execute() as Promise<{ action: string; data: Record<string, unknown> }[]>;
}

/** Starts `upload` and, once its temporary file shows in the home, runs `fault`; the upload's answer. */
async function faultDuringUpload(
  homeKey: string,
  upload: () => Promise<{ status: number }>,
  fault: () => void,
) {
  const answer = upload();
  await until("the upload to be written into the computer", async () =>
    supervisor.uploadLeftovers(homeKey).length > 0 ? true : undefined,
  );
  fault();
  return answer;
}

/** The file's version after a fault: one of `allowed` whole, else what it became. */
async function versionOf(s: OpenedSession, path: string, allowed: string[]): Promise<string> {
  const read = await sessions().read(s, path);
  expect(read.status, read.text.slice(0, 300)).toBe(200);
  const found = allowed.find((mark) => sha(version(mark)) === sha(read.text));
  return found ?? `${path} is none of ${allowed.join(", ")} (${read.text.length} bytes)`;
}

describe("faults around a Docker computer", () => {
  let bot: Awaited<ReturnType<typeof createBot>>;
  let s: OpenedSession;
  let heartbeats: NodeJS.Timeout | undefined;

  beforeAll(async () => {
    bot = await createBot(w.people.owner, w.workspaceId, "private");
    s = await sessions().opened(bot.id);
    // as a bot does while it works: a restart under a tool call can outlast one lease on a busy machine
    heartbeats = setInterval(
      () =>
        void sessions()
          .heartbeat(s)
          .catch(() => undefined),
      10_000,
    );
    expectStatus(await sessions().write(s, "kept.txt", version("a")), 204);
  }, SLOW);

  afterAll(() => clearInterval(heartbeats));

  it("the computer killed mid-upload: the file is whole, no temporary file is left, the session goes on", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    const container = await containerOf(bot.computerId);
    faults.tried();
    const answer = await faultDuringUpload(
      bot.id,
      () => sessions().write(s, "kept.txt", version("b")),
      () => execFileSync("docker", ["kill", container], { stdio: "ignore" }),
    );
    // the session's tool call finds the computer gone, starts it again and writes once more
    expect(answer.status).toBe(204);
    faults.refused();
    const lost = [await versionOf(s, "kept.txt", ["b"])].filter((found) => found !== "b");
    lost.push(...supervisor.uploadLeftovers(bot.id).map((path) => `leftover ${path}`));
    faults.lost(lost);
    expect(await stateOf(bot.computerId)).toBe("running");
  });

  it("the computer killed while idle: the api shows it stopped within a round, audited, and it starts again whole", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    const container = await containerOf(bot.computerId);
    const before = (await auditActions(bot.computerId)).length;
    faults.tried();
    execFileSync("docker", ["kill", container], { stdio: "ignore" });
    await until("the api to see the computer stopped", async () =>
      (await stateOf(bot.computerId)) === "stopped" ? true : undefined,
    );
    const reconciled = (await auditActions(bot.computerId))
      .slice(before)
      .filter((event) => event.action === "computer.stopped" && event.data.reason === "found-stopped");
    expect(reconciled).toHaveLength(1);
    expect(reconciled[0]?.data).toMatchObject({ from: "running", state: "stopped" });
    faults.refused();
    // the open session's next call starts it again, with the home as it was
    faults.lost([await versionOf(s, "kept.txt", ["b"])].filter((found) => found !== "b"));
    expect(await stateOf(bot.computerId)).toBe("running");
  });

  it("the supervisor killed mid-upload and mid-command: each ends with a clear problem, nothing is lost, all works once it is back", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    faults.tried();
    const upload = await faultDuringUpload(
      bot.id,
      () => sessions().write(s, "kept.txt", version("c")),
      () => void supervisor.kill9(),
    );
    problem(upload as never, 503, "PROVIDER_UNAVAILABLE");
    faults.refused();
    await supervisor.start();

    faults.tried();
    const command = sessions().shell(s, { command: "echo started; sleep 20; echo finished" });
    await new Promise((done) => setTimeout(done, 3_000));
    await supervisor.kill9();
    const { exit, stdout, events } = await command;
    expect(stdout).not.toContain("finished");
    expect(exit).toBeUndefined();
    expect(events.at(-1)).toMatchObject({ type: "error", code: "PROVIDER_UNAVAILABLE" });
    faults.refused();
    await supervisor.start();

    const lost = [await versionOf(s, "kept.txt", ["b", "c"])].filter(
      (found) => found !== "b" && found !== "c",
    );
    lost.push(...supervisor.uploadLeftovers(bot.id).map((path) => `leftover ${path}`));
    const written = (await auditActions(s.sessionId)).filter(
      (event) => event.action === "session.file_written",
    );
    if (written.length === 0) lost.push("the session's audit trail of file writes");
    faults.lost(lost);
    const again = await sessions().shell(s, { command: "echo again" });
    expect(again.stdout).toBe("again\n");
  });

  it("the supervisor frozen for 30 s: heartbeats keep the session, tool calls answer 503 quickly, health says degraded, all works after", {
    timeout: SLOW,
  }, async (context) => {
    const faults = tally(context, "faults");
    faults.tried();
    supervisor.signal("SIGSTOP");
    try {
      const frozenUntil = Date.now() + 30_000;
      const started = Date.now();
      const listing = await sessions().list(s);
      problem(listing, 503, "PROVIDER_UNAVAILABLE");
      expect(listing.headers.get("retry-after")).toBe("5");
      // answered by the supervisor client's liveness watch, not after the freeze
      expect(Date.now() - started).toBeLessThan(20_000);
      faults.refused();
      const health = expectStatus(await t.client().get("/health"), 200).json;
      expect(health).toMatchObject({ status: "degraded", provider: "error" });
      while (Date.now() < frozenUntil) {
        faults.tried();
        expectStatus(await sessions().heartbeat(s), 200);
        await new Promise((done) => setTimeout(done, 5_000));
      }
    } finally {
      supervisor.signal("SIGCONT");
    }
    const lost: string[] = [];
    const open = await t.database.db
      .selectFrom("execution_leases")
      .select("status")
      .where("id", "=", s.sessionId)
      .executeTakeFirst();
    if (open?.status !== "open") lost.push("the session");
    lost.push(
      ...[await versionOf(s, "kept.txt", ["b", "c"])].filter((found) => found !== "b" && found !== "c"),
    );
    faults.lost(lost);
    await until("health to say ok again", async () =>
      expectStatus(await t.client().get("/health"), 200).json.status === "ok" ? true : undefined,
    );
  });
});
