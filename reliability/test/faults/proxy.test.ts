/**
 * The screen proxy killed with a control socket and a view socket open on a real screen: the
 * sockets drop, the control lease lives on in the api (nothing about it changes), and once the
 * proxy is back, capabilities minted anew open both kinds of socket again, while the tokens the
 * dead proxy had admitted stay spent.
 */
import { randomBytes } from "node:crypto";
import { createComputer, destroyMachine } from "@cubicle/api/testing/computers";
import {
  expectStatus,
  startTestApi,
  type TestApi,
  type TestClient,
  TRUSTED_ORIGIN,
} from "@cubicle/api/testing/harness";
import { type OpenedScreen, openScreenSocket, refusedStatus } from "@cubicle/api/testing/screen-socket";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { SCREEN_PROTOCOL } from "@cubicle/proxy/capability";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ProxyProcess, startProxyProcess } from "../../src/proxy-process.ts";
import { changedRows, type Expected, snapshotRows } from "../../src/rows.ts";
import { tally } from "../../src/tally.ts";

let t: TestApi;
let proxy: ProxyProcess;
let proxyEnv: Record<string, string>;
let world: World;
let computer: Computer;

beforeAll(async () => {
  const key = randomBytes(32).toString("base64url");
  t = await startTestApi({ SANDBOX_PROVIDER: "desktop", SCREEN_CAPABILITY_KEY: key });
  proxyEnv = {
    SCREEN_CAPABILITY_KEY: key,
    CUBICLE_API_URL: t.api.url,
    PROXY_ALLOWED_ORIGINS: TRUSTED_ORIGIN,
  };
  proxy = await startProxyProcess(proxyEnv);
  world = await buildWorld(t, "proxy-kill");
  computer = await createComputer(t, world.workspaceId);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  if (computer) {
    await destroyMachine(t, computer);
  }
  await t?.close();
});

const screenPath = () => `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/0`;

/** A capability as the dashboard gets one before it opens a screen socket. */
const mint = async (person: TestClient, mode: "view" | "control") =>
  expectStatus(await person.post(`${screenPath()}/capabilities`, { mode }), 201).json.token as string;

/** What minting and redeeming the new capabilities writes; anything else changed is the fault's. */
const minting: Expected = (key, before, after) => {
  const row = after as Record<string, unknown> | undefined;
  if (before === undefined && key.startsWith("capability_redemptions/")) return true;
  if (before === undefined && key.startsWith("audit_events/"))
    return row?.action === "screen.capability_minted";
  if (!key.startsWith("computers/") || !before || !row) return false;
  // minting a capability is use of the computer: it keeps it from being suspended as idle
  return (
    JSON.stringify({ ...before, last_activity_at: null }) ===
    JSON.stringify({ ...row, last_activity_at: null })
  );
};

/** Opens a socket and shows that frames come through it. */
async function watch(token: string): Promise<OpenedScreen> {
  const screen = await openScreenSocket(proxy.url, token, { origin: TRUSTED_ORIGIN });
  screen.rfb.requestUpdate({ x: 0, y: 0, width: 16, height: 16 });
  expect((await screen.rfb.readUpdate()).length).toBeGreaterThan(0);
  return screen;
}

it("kill the proxy with open control sockets: leases unaffected; sockets reconnect with new capabilities", async (context) => {
  const faults = tally(context, "faults");
  const { member, viewer } = world.people;
  const lease = expectStatus(await member.post(`${screenPath()}/control`), 201).json;
  const spent = { control: await mint(member, "control"), view: await mint(viewer, "view") };
  const control = await watch(spent.control);
  const view = await watch(spent.view);
  expect((await proxy.health()).sockets).toEqual({ view: 1, control: 1, record: 0 });
  const holderBefore = expectStatus(await viewer.get(`${screenPath()}/control`), 200).json;
  const before = await snapshotRows(t.database.db);

  faults.tried();
  await proxy.kill("SIGKILL");
  // nothing was left to send a close frame: the browser sees the connection cut
  expect(await control.closedWith).toEqual({ code: 1006, reason: "" });
  expect(await view.closedWith).toEqual({ code: 1006, reason: "" });

  const lost: string[] = [];
  const holderAfter = expectStatus(await viewer.get(`${screenPath()}/control`), 200).json;
  if (JSON.stringify(holderAfter) !== JSON.stringify(holderBefore))
    lost.push(
      `the screen's controller went from ${JSON.stringify(holderBefore)} to ${JSON.stringify(holderAfter)}`,
    );

  proxy = await startProxyProcess(proxyEnv, { port: proxy.port });
  // single use: admitted once by the proxy that died, refused by the one that replaced it
  for (const [mode, token] of Object.entries(spent)) {
    faults.tried();
    const counted = (await proxy.refusals()).get("replayed") ?? 0;
    const status = await refusedStatus(proxy.url, [SCREEN_PROTOCOL, token], TRUSTED_ORIGIN);
    const replayed = ((await proxy.refusals()).get("replayed") ?? 0) - counted;
    if (status === 404 && replayed === 1) faults.refused();
    else
      lost.push(
        `a spent ${mode} token was answered ${status}, with ${replayed} refusals counted as replayed`,
      );
  }
  const reopened = [await watch(await mint(member, "control")), await watch(await mint(viewer, "view"))];
  expect((await proxy.health()).sockets).toEqual({ view: 1, control: 1, record: 0 });

  // the same lease still holds the screen, with the same fence, and nothing recorded its end
  const holderNow = expectStatus(await viewer.get(`${screenPath()}/control`), 200).json;
  if (holderNow.leaseId !== lease.leaseId) lost.push(`the screen is now held by ${holderNow.leaseId}`);
  const row = await t.database.db
    .selectFrom("control_leases")
    .selectAll()
    .where("id", "=", lease.leaseId)
    .executeTakeFirstOrThrow();
  if (row.fence !== lease.fence || row.released_at !== null)
    lost.push(`lease ${row.id}: fence ${row.fence}, released ${row.released_at} (${row.release_reason})`);
  const after = await snapshotRows(t.database.db);
  lost.push(...changedRows(before, after, minting));
  for (const screen of reopened) screen.ws.close();
  faults.lost(lost);
}, 60_000);
