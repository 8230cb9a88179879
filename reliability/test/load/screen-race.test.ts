import { createComputer } from "@cubicle/api/testing/computers";
import { expectStatus, startTestApi, type TestApi, type TestClient } from "@cubicle/api/testing/harness";
import { buildWorld, join, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { afterAll, beforeAll, it } from "vitest";
import { tally } from "../../src/tally.ts";

/**
 * Eight contenders race for control of screen 0 of one Team Computer, 100 rounds. Control is a
 * person's lease (an API key cannot take it), so each racer is a member of its own. On the fake
 * provider: who wins is decided by the api and the database's unique index, not by the desktop.
 */
const RACERS = 8;
const ROUNDS = 100;
/**
 * Takes per racer in the let-go-at-once case. The window it probes (a lost insert whose winner has
 * already let go) opened about once per 1,200 takes before the fix, so 2,400 in all.
 */
const TAKES_EACH = 300;

let t: TestApi;
let world: World;
let computer: Computer;
const racers: TestClient[] = [];

beforeAll(async () => {
  t = await startTestApi();
  world = await buildWorld(t, "race");
  computer = await createComputer(t, world.workspaceId);
  for (let i = 0; i < RACERS; i++)
    racers.push(await join(t, world.people.owner, world.workspaceId, `racer-${i}@example.com`, "member"));
});
afterAll(() => t?.close());

const control = () => `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/0/control`;

it("gives each of 100 rounds of 8 racers exactly one controller, with a fence of its own; the others are refused", async (context) => {
  const count = tally(context, "load");
  const lost: string[] = [];
  const winners: Array<{ leaseId: string; fence: number }> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const answers = await Promise.all(racers.map((racer) => racer.post(control())));
    count.tried(RACERS);
    const won = answers.flatMap((answer, i) => (answer.status === 201 ? [i] : []));
    const refused = answers.filter((answer) => answer.status === 409 && answer.json?.code === "CONTROL_HELD");
    count.refused(refused.length);
    if (won.length !== 1 || refused.length !== RACERS - 1) {
      const statuses = answers.map(
        (answer) => `${answer.status} ${answer.json?.code ?? answer.text.slice(0, 80)}`,
      );
      lost.push(`round ${round}: ${won.length} winners; answers ${statuses.join(" / ")}`);
    }
    for (const i of won) {
      const winner = racers[i] as TestClient;
      const lease = answers[i]?.json as { leaseId: string; fence: number };
      const previous = winners.at(-1);
      if (previous && lease.fence <= previous.fence)
        lost.push(`round ${round}: fence ${lease.fence} is not above the last winner's ${previous.fence}`);
      winners.push(lease);
      // the refused were told who holds it, and the api agrees
      const holder = expectStatus(await world.people.viewer.get(control()), 200).json;
      if (holder.leaseId !== lease.leaseId || holder.holder.id !== winner.userId)
        lost.push(
          `round ${round}: the screen is held by ${holder.leaseId}, not the winner's ${lease.leaseId}`,
        );
      for (const answer of refused)
        if (!String(answer.json?.detail).includes(winner.email))
          lost.push(`round ${round}: a refusal did not name the holder: ${answer.json?.detail}`);
      count.tried();
      const released = await winner.delete(`${control()}/${lease.leaseId}`);
      if (released.status !== 204) lost.push(`round ${round}: release answered ${released.status}`);
    }
  }

  // In the database: one lease per round, each ended by its holder before the next was granted.
  const leases = await t.database.db
    .selectFrom("control_leases")
    .selectAll()
    .where("computer_id", "=", computer.id)
    .orderBy("fence")
    .execute();
  if (leases.length !== ROUNDS) lost.push(`${leases.length} control leases for ${ROUNDS} rounds`);
  const fences = new Set(leases.map((lease) => lease.fence));
  if (fences.size !== leases.length) lost.push("two control leases share a fence");
  leases.forEach((lease, i) => {
    if (lease.released_at === null || lease.release_reason !== "released")
      lost.push(`lease ${lease.id} is still live or ended as ${lease.release_reason}`);
    const next = leases[i + 1];
    if (lease.released_at && next && next.created_at < lease.released_at)
      lost.push(`lease ${next.id} was granted while ${lease.id} was still held`);
  });
  const granted = leases.map((lease) => lease.id).join();
  if (granted !== winners.map((winner) => winner.leaseId).join())
    lost.push("the leases in the database are not the winners the racers were told of");
  const now = await world.people.viewer.get(control());
  if (now.status !== 404) lost.push(`after the last release the screen shows ${now.status} ${now.text}`);
  count.lost(lost);
});

it("answers every take with a grant or the designed refusal while winners let go at once", async (context) => {
  const count = tally(context, "load");
  const lost: string[] = [];
  const grants: number[] = [];
  // each racer lets go the moment it wins, so a take that lost the insert may find the screen free
  // again by the time it looks for the winner to name
  await Promise.all(
    racers.map(async (racer, i) => {
      for (let attempt = 0; attempt < TAKES_EACH; attempt++) {
        const taken = await racer.post(control());
        count.tried();
        if (taken.status === 409 && taken.json?.code === "CONTROL_HELD") {
          count.refused();
          continue;
        }
        if (taken.status !== 201) {
          lost.push(`racer ${i}: take answered ${taken.status} ${taken.text.slice(0, 200)}`);
          continue;
        }
        grants.push(taken.json.fence);
        count.tried();
        const released = await racer.delete(`${control()}/${taken.json.leaseId}`);
        if (released.status !== 204) lost.push(`racer ${i}: release answered ${released.status}`);
      }
    }),
  );
  if (new Set(grants).size !== grants.length) lost.push("a fence was granted twice");
  const live = await t.database.db
    .selectFrom("control_leases")
    .select("id")
    .where("computer_id", "=", computer.id)
    .where("released_at", "is", null)
    .execute();
  if (live.length > 0) lost.push(`${live.length} control leases left live after every winner let go`);
  count.lost(lost);
});
