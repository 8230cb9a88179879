import { expectStatus, type RawResponse, startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import { createBot, type OpenedSession, SessionClient } from "@cubicle/api/testing/sessions";
import { afterAll, beforeAll, it } from "vitest";
import { tally } from "../../src/tally.ts";

/**
 * 100 sessions across 20 Team Computers (5 bots each), every one opened against a rival opener,
 * heartbeated, used and ended, all at once. On the fake provider: the invariants under test (one
 * session per bot, one lease per screen, fences never honoured twice) live in the api and the
 * database, and 20 real desktops would not fit this machine.
 */
const COMPUTERS = 20;
const BOTS_PER_COMPUTER = 5;

interface Bench {
  workspaceId: string;
  /** The workspace's API key and its owner (a person), who race to open each bot's session. */
  openers: [SessionClient, SessionClient];
  botIds: string[];
}

/** One session's life as its holder saw it. */
interface Lived {
  session: OpenedSession;
  /** When the open answered, and when the end was sent: inside the time the api held the lease. */
  heldFrom: number;
  heldUntil: number;
}

let t: TestApi;
const benches: Bench[] = [];

beforeAll(async () => {
  t = await startTestApi();
  const owner = t.client();
  expectStatus(await owner.signUp("load-owner@example.com"), 200);
  for (let i = 0; i < COMPUTERS; i++) {
    const workspaceId = expectStatus(await owner.post("/v1/workspaces", { name: `Load ${i}` }), 201).json.id;
    const key = expectStatus(
      await owner.post(`/v1/workspaces/${workspaceId}/api-keys`, { name: `load-${i}`, role: "member" }),
      201,
    ).json.key as string;
    const botIds: string[] = [];
    for (let b = 0; b < BOTS_PER_COMPUTER; b++) botIds.push((await createBot(owner, workspaceId)).id);
    benches.push({
      workspaceId,
      openers: [
        new SessionClient({ client: t.client(), apiKey: key }, workspaceId),
        new SessionClient({ client: owner }, workspaceId),
      ],
      botIds,
    });
  }
});
afterAll(() => t?.close());

it("opens, heartbeats, uses and ends 100 sessions on 20 computers at once: no double lease, no fence honoured twice, no leaked screen", async (context) => {
  const count = tally(context, "load");
  const lost: string[] = [];
  /** Every answer is checked here: an unexpected one is a violation, not a crash of the run. */
  const expectAnswer = (what: string, response: RawResponse, status: number, code?: string) => {
    count.tried();
    if (response.status === status && (code === undefined || response.json?.code === code)) return true;
    lost.push(
      `${what}: expected ${status}${code ? ` ${code}` : ""}, got ${response.status} ${response.text.slice(0, 200)}`,
    );
    return false;
  };

  async function live(bench: Bench, botId: string, index: number): Promise<Lived | undefined> {
    const what = `bot ${index}`;
    const answers = await Promise.all(bench.openers.map((opener) => opener.open(botId)));
    count.tried(2);
    const won = answers.flatMap((answer, i) => (answer.status === 201 ? [i] : []));
    const lostRace = answers.filter(
      (answer) => answer.status === 409 && answer.json?.code === "COMPUTER_BUSY",
    );
    if (won.length !== 1 || lostRace.length !== 1) {
      lost.push(
        `${what}: two openers got ${answers.map((a) => `${a.status} ${a.text.slice(0, 120)}`).join(" / ")}`,
      );
      return undefined;
    }
    count.refused();
    const holder = bench.openers[won[0] as number] as SessionClient;
    const session = answers[won[0] as number]?.json as OpenedSession;
    const heldFrom = Date.now();
    const file = `load/${botId}.txt`;
    // the holder's calls overlap each other as well as every other session's
    const [beat, written, shell, observed] = await Promise.all([
      holder.heartbeat(session),
      holder.write(session, file, session.sessionId),
      holder.shell(session, { command: `echo ${index}` }),
      holder.observe(session),
    ]);
    expectAnswer(`${what} heartbeat`, beat, 200);
    expectAnswer(`${what} write`, written, 204);
    if (expectAnswer(`${what} shell`, shell.response, 200) && shell.stdout !== `${index}\n`)
      lost.push(`${what}: shell printed ${JSON.stringify(shell.stdout)}`);
    expectAnswer(`${what} observe`, observed, 200);
    const read = await holder.read(session, file);
    if (expectAnswer(`${what} read`, read, 200) && read.text !== session.sessionId)
      lost.push(`${what}: read back ${JSON.stringify(read.text)}`);
    const heldUntil = Date.now();
    expectAnswer(`${what} end`, await holder.end(session), 200);
    // the fence died with the session: nothing it carries is honoured again
    for (const [call, response] of [
      ["heartbeat", await holder.heartbeat(session)],
      ["end", await holder.end(session)],
      ["write", await holder.write(session, file, "late")],
    ] as const)
      if (expectAnswer(`${what} ${call} after its end`, response, 409, "STALE_FENCE")) count.refused();
    return { session, heldFrom, heldUntil };
  }

  const lives = (
    await Promise.all(
      benches.flatMap((bench, c) =>
        bench.botIds.map((botId, b) => live(bench, botId, c * BOTS_PER_COMPUTER + b)),
      ),
    )
  ).filter((lived): lived is Lived => lived !== undefined);

  // No fence was handed out twice, nor a screen held by two sessions at once.
  const fences = lives.map((lived) => lived.session.fence);
  if (new Set(fences).size !== fences.length) lost.push(`fences handed out twice: ${fences.join(",")}`);
  for (const a of lives)
    for (const b of lives)
      if (
        a.session.fence < b.session.fence &&
        a.session.computerId === b.session.computerId &&
        a.session.screen !== null &&
        a.session.screen === b.session.screen &&
        a.heldFrom < b.heldUntil &&
        b.heldFrom < a.heldUntil
      )
        lost.push(
          `screen ${a.session.screen} held by sessions ${a.session.sessionId} and ${b.session.sessionId} at once`,
        );
  if (lives.some((lived) => lived.session.screen === null))
    lost.push("a session got no screen though no computer had more than 5 of its 8 in use");

  // In the database: every session ended once, its one screen lease released.
  const db = t.database.db;
  const sessions = await db.selectFrom("execution_leases").selectAll().execute();
  for (const row of sessions)
    if (row.status !== "ended") lost.push(`session ${row.id} is ${row.status} in the database`);
  const leases = await db.selectFrom("screen_leases").selectAll().execute();
  for (const lease of leases)
    if (lease.released_at === null)
      lost.push(`screen lease ${lease.id} (screen ${lease.screen_index}) leaked`);
  for (const lived of lives) {
    const ofSession = leases.filter((lease) => lease.execution_lease_id === lived.session.sessionId);
    if (ofSession.length !== 1 || ofSession[0]?.screen_index !== lived.session.screen)
      lost.push(`session ${lived.session.sessionId} has ${ofSession.length} screen leases`);
  }
  const audits = await db
    .selectFrom("audit_events")
    .select(["action", "target_id"])
    .where("action", "in", ["session.opened", "session.ended"])
    .execute();
  for (const action of ["session.opened", "session.ended"]) {
    const targets = audits.filter((audit) => audit.action === action).map((audit) => audit.target_id);
    if (targets.length !== lives.length || new Set(targets).size !== lives.length)
      lost.push(`${targets.length} ${action} records for ${lives.length} sessions`);
  }

  // Through the api: nothing listed as open, and every computer hands out its lowest screens again.
  for (const bench of benches) {
    const [key] = bench.openers;
    const listed = await key.caller.client.get(`/v1/workspaces/${bench.workspaceId}/sessions`, {
      apiKey: key.caller.apiKey,
    });
    if (expectAnswer("open sessions", listed, 200) && listed.json.items.length > 0)
      lost.push(`workspace ${bench.workspaceId} still lists ${listed.json.items.length} open sessions`);
    const again = await Promise.all(bench.botIds.map((botId) => key.open(botId)));
    const reopened = again.flatMap((answer, b) =>
      expectAnswer(`bot ${b} reopened`, answer, 201) ? [answer.json as OpenedSession] : [],
    );
    const screens = reopened.map((session) => session.screen).sort();
    if (screens.join() !== [0, 1, 2, 3, 4].join())
      lost.push(
        `computer of ${bench.workspaceId} handed out screens ${screens.join()} after every session ended`,
      );
    for (const session of reopened) expectAnswer("reopened end", await key.end(session), 200);
  }

  count.lost(lost);
});
