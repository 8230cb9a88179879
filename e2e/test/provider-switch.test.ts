import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkpointsOn } from "@cubicle/api/testing/checkpoints";
import { machineFor } from "@cubicle/api/testing/computers";
import { expectStatus, startTestApi, type TestApi } from "@cubicle/api/testing/harness";
import { createBot, type OpenedSession, SessionClient } from "@cubicle/api/testing/sessions";
import { type LoginSite, startLoginSite } from "@cubicle/api/testing/site-for-computers";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { DatabaseHandle } from "@cubicle/db";
import { openTestDatabase } from "@cubicle/db/testing";
import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * Switching providers is a setting, not a migration: a Team Computer's home made on `docker`,
 * with Chromium signed in to a cookie-login site, then SANDBOX_PROVIDER changed to `e2b-emulator`
 * and the api restarted (same database, secrets and checkpoint store). The next session runs on a
 * fresh E2B sandbox restored from the latest checkpoint, and Chromium there is still signed in.
 * Then the same again from `e2b-emulator` to `daytona-emulator`, and from there to `box-emulator`.
 */
const SLOW = 600_000;
const NETWORK = "cubicle-computers";
const BRIDGE = "cubicle0";

const secrets = {
  BETTER_AUTH_SECRET: randomBytes(32).toString("base64url"),
  ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
  SCREEN_CAPABILITY_KEY: randomBytes(32).toString("base64url"),
  CHECKPOINT_DIR: mkdtempSync(join(tmpdir(), "cubicle-switch-checkpoints-")),
};

let database: DatabaseHandle;
let supervisor: TestSupervisor;
let site: LoginSite;
let t: TestApi;
let w: World;
const apis: TestApi[] = [];
const c = checkpointsOn(
  () => t,
  () => w,
);

async function startApiOn(provider: Record<string, string>): Promise<TestApi> {
  const api = await startTestApi({ ...secrets, ...provider }, { database });
  apis.push(api);
  return api;
}

beforeAll(async () => {
  database = await openTestDatabase();
  supervisor = await startTestSupervisor();
  t = await startApiOn({
    SANDBOX_PROVIDER: "docker",
    SANDBOX_SUPERVISOR_URL: supervisor.url,
    SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
  });
  w = await buildWorld(t, "provider-switch");
  site = await startLoginSite(NETWORK, BRIDGE);
}, SLOW);

afterAll(async () => {
  await site?.close();
  // every machine the records name: the box of the last leg
  for (const api of apis.reverse()) {
    for (const computer of await api.database.db.selectFrom("computers").selectAll().execute()) {
      const machine = await machineFor(api, computer).catch(() => undefined);
      await machine?.provider.destroy(machine.ref).catch(() => undefined);
    }
    await api.close().catch(() => undefined);
  }
  await supervisor?.close();
  await database?.close();
  rmSync(secrets.CHECKPOINT_DIR, { recursive: true, force: true });
}, SLOW);

const sessions = () => new SessionClient({ client: w.people.owner.at(t.api.url) }, w.workspaceId);
/** The address the session's machine reaches other hosts from (the old machine is gone by then). */
const addressOf = async (s: OpenedSession) =>
  (await sessions().shell(s, { command: "hostname -I" })).stdout.trim().split(" ")[0];
const launchBrowser = async (s: OpenedSession, url: string) =>
  expectStatus(await sessions().tool(s, "POST", "/launch-app", { app: "browser", url }), 202);

/**
 * The operator changes one setting and restarts the api; /health shows the new provider. The
 * machine on the old provider is removed first, while that provider still runs (an emulator goes
 * with its api): the switch never needs it, only the checkpoint.
 */
async function switchTo(kind: string, botComputerId: string): Promise<void> {
  const old = await machineFor(t, await c.computerRow(botComputerId));
  await old.provider.destroy(old.ref);
  await t.api.close();
  t = await startApiOn({ SANDBOX_PROVIDER: kind });
  const health = expectStatus(await t.client().get("/health"), 200).json;
  expect(health).toMatchObject({ sandbox: kind, configured: kind, sandboxNote: null });
}

/** The providers the computer moves to, in turn, after Docker; each its own machine's home. */
const LEGS = [
  { kind: "e2b-emulator", vendor: "E2B", machine: "the E2B sandbox", home: "/home/user" },
  { kind: "daytona-emulator", vendor: "Daytona", machine: "the Daytona sandbox", home: "/home/daytona" },
  { kind: "box-emulator", vendor: "Box", machine: "the box", home: "/home/user" },
] as const;

describe("switching a deployment from docker to e2b-emulator, then to daytona-emulator, then to box-emulator", () => {
  it(
    "moves a Team Computer to a fresh sandbox restored from its latest checkpoint at each switch, with Chromium still signed in",
    async () => {
      const bot = await createBot(w.people.owner, w.workspaceId, "team");
      const first = await sessions().opened(bot.id);
      expect((await c.computerRow(bot.computerId)).provider_kind).toBe("docker");
      await launchBrowser(first, `${site.url}/login`);
      await until(
        "Chromium in the Docker computer to sign in",
        async () => site.requests.find((r) => r.path === "/" && r.signedIn),
        60_000,
      );
      expectStatus(await sessions().end(first, "success"), 200);
      await until(
        "the session-end checkpoint",
        async () => (await c.list(bot.computerId)).find((r) => r.reason === "session-success"),
        120_000,
      );

      for (const [i, leg] of LEGS.entries()) {
        await switchTo(leg.kind, bot.computerId);
        const before = site.requests.length;
        const session = await sessions().opened(bot.id);
        const row = await c.computerRow(bot.computerId);
        expect(row.provider_kind).toBe(leg.kind);
        expect(row.state).toBe("running");
        const restored = (await c.audits(bot.computerId, "checkpoint.restored")).at(-1);
        expect(restored?.data, `the restore onto ${leg.vendor}`).toMatchObject({ into: "fresh" });
        const where = await sessions().shell(session, { command: "pwd; ls -d .browser-profiles/chromium" });
        expect(where.stdout).toBe(`${leg.home}/cubicle-home/bots/${bot.id}\n.browser-profiles/chromium\n`);

        await launchBrowser(session, `${site.url}/`);
        const visit = await until(
          `Chromium in ${leg.machine} to open the site`,
          async () => site.requests.slice(before).find((r) => r.path === "/"),
          90_000,
        );
        expect(visit.from, `the visit comes from ${leg.machine}`).toBe(await addressOf(session));
        expect(visit.signedIn, `signed in on ${leg.vendor} with the cookie made on Docker`).toBe(true);
        expectStatus(await sessions().end(session, "success"), 200);
        // the next switch restores from this session's checkpoint
        if (i < LEGS.length - 1)
          await until(
            `the session-end checkpoint on ${leg.vendor}`,
            async () => {
              const ends = (await c.list(bot.computerId)).filter((r) => r.reason === "session-success");
              return ends.length >= i + 2 ? ends : undefined;
            },
            120_000,
          );
      }
    },
    SLOW,
  );
});
