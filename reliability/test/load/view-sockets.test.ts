import { randomBytes } from "node:crypto";
import { createComputer, destroyMachine } from "@cubicle/api/testing/computers";
import { expectStatus, startTestApi, type TestApi, TRUSTED_ORIGIN } from "@cubicle/api/testing/harness";
import { type OpenedScreen, openScreenSocket } from "@cubicle/api/testing/screen-socket";
import { until } from "@cubicle/api/testing/until";
import { buildWorld, type World } from "@cubicle/api/testing/world";
import type { Computer } from "@cubicle/db";
import { afterAll, beforeAll, it } from "vitest";
import { type ProxyMemory, type ProxyProcess, startProxyProcess } from "../../src/proxy-process.ts";
import { tally } from "../../src/tally.ts";

/**
 * 1,000 view sockets in 10 waves of 100 through the real proxy (its own process) to real screens
 * (the desktop provider's Xvfb and x11vnc): each opens and gets a framebuffer update, all 100 of a
 * wave are open at once, and once they are closed the proxy holds none and its memory comes back.
 */
const WAVES = 10;
const PER_WAVE = 100;
/**
 * x11vnc takes about ten new clients a second, one at a time, and a burst beyond its listen queue
 * waits out TCP's retransmission backoff (100 at once straight to x11vnc: a quarter still unserved
 * after 15 s), past the proxy's 10 s handshake timeout. That limit is the screen's, so the wave is
 * spread over four screens and opened a dozen sockets at a time; all of it is still open together.
 */
const SCREENS = 4;
const OPENING_AT_ONCE = 12;
const MiB = 1024 * 1024;
/**
 * After a forced collection, the V8 heap and the buffers outside it (`external`) are what the proxy
 * still references; between waves they moved by under 2 MiB with nothing open, while a wave's 100
 * open sockets weigh about 2 MiB: 4 MiB allows the jitter and fails a leak of a fifth of the
 * sockets of the waves measured.
 */
const HEAP_TOLERANCE = 4 * MiB;
/**
 * Resident memory is the honest, coarse measure: V8 grows and returns its heap reservation by tens
 * of MiB between collections holding the same live data (measured 20-60 MiB of heapTotal), so RSS
 * only has to stay within that swing of its baseline: what it catches is growth without bound
 * outside the heap (native socket buffers, TLS, zlib), which the heap check cannot see.
 */
const RSS_TOLERANCE = 48 * MiB;

let t: TestApi;
let proxy: ProxyProcess;
let world: World;
let computer: Computer;

beforeAll(async () => {
  const key = randomBytes(32).toString("base64url");
  t = await startTestApi({ SANDBOX_PROVIDER: "desktop", SCREEN_CAPABILITY_KEY: key });
  proxy = await startProxyProcess({
    SCREEN_CAPABILITY_KEY: key,
    CUBICLE_API_URL: t.api.url,
    PROXY_ALLOWED_ORIGINS: TRUSTED_ORIGIN,
    // a wave is one viewer's 100 sockets from one address, all open at once
    PROXY_MAX_SOCKETS_PER_IP: String(PER_WAVE),
    PROXY_MAX_SOCKETS_PER_SUBJECT: String(PER_WAVE),
  });
  world = await buildWorld(t, "view-load");
  computer = await createComputer(t, world.workspaceId);
});

afterAll(async () => {
  await proxy?.close();
  if (computer) {
    await destroyMachine(t, computer);
  }
  await t?.close();
});

const mint = async (screen: number) =>
  expectStatus(
    await world.people.viewer.post(
      `/v1/workspaces/${world.workspaceId}/computers/${computer.id}/screens/${screen}/capabilities`,
      { mode: "view" },
    ),
    201,
  ).json.token as string;

/** Opens a socket and waits for a small framebuffer update on it; what went wrong, if it did not. */
async function watch(token: string): Promise<OpenedScreen | string> {
  try {
    const screen = await openScreenSocket(proxy.url, token, { origin: TRUSTED_ORIGIN });
    screen.rfb.requestUpdate({ x: 0, y: 0, width: 16, height: 16 });
    if ((await screen.rfb.readUpdate()).length === 0) return "an empty framebuffer update";
    return screen;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Runs `task` on every item, at most `limit` at a time, keeping the results in order. */
async function atMost<T, R>(limit: number, items: T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const weight = (memory: ProxyMemory) => memory.heapUsed + memory.external;
const describeMemory = (memory: ProxyMemory) =>
  `rss ${mib(memory.rss)}, heap ${mib(memory.heapUsed)}, external ${mib(memory.external)}`;

it("opens and closes 1,000 view sockets in waves through the proxy: each gets a frame, memory returns", async (context) => {
  const count = tally(context, "load");
  const lost: string[] = [];
  let baseline: ProxyMemory | undefined;
  let last: ProxyMemory | undefined;
  for (let wave = 1; wave <= WAVES; wave++) {
    const tokens = await Promise.all(Array.from({ length: PER_WAVE }, (_, i) => mint(i % SCREENS)));
    count.tried(PER_WAVE);
    const outcomes = await atMost(OPENING_AT_ONCE, tokens, watch);
    const open = outcomes.filter((outcome): outcome is OpenedScreen => typeof outcome !== "string");
    for (const outcome of outcomes)
      if (typeof outcome === "string") lost.push(`wave ${wave}: a socket failed: ${outcome}`);
    const health = await proxy.health();
    if (health.sockets.view !== open.length)
      lost.push(
        `wave ${wave}: the proxy counts ${health.sockets.view} open view sockets, not ${open.length}`,
      );
    const whileOpen = await proxy.memory();
    for (const screen of open) screen.ws.close();
    const codes = await Promise.all(open.map((screen) => screen.closed));
    if (codes.some((code) => code !== 1005 && code !== 1000))
      lost.push(`wave ${wave}: closed with ${[...new Set(codes)].join(", ")}`);
    // the proxy lets go of a socket once both its ends have closed, a moment after the browser's
    await until("the proxy to let go of its sockets", async () =>
      (await proxy.health()).sockets.view === 0 ? true : undefined,
    ).catch(() => lost.push(`wave ${wave}: the proxy still holds sockets after all were closed`));
    last = await proxy.memory();
    console.log(
      `wave ${wave}: ${open.length} open: ${describeMemory(whileOpen)}; closed: ${describeMemory(last)}`,
    );
    // the first wave warms the proxy up (code compiled, pools and caches filled): not a leak
    baseline ??= last;
  }
  if (!baseline || !last) throw new Error("no wave was weighed");
  if (weight(last) > weight(baseline) + HEAP_TOLERANCE)
    lost.push(`heap and buffers grew from ${mib(weight(baseline))} to ${mib(weight(last))}`);
  if (last.rss > baseline.rss + RSS_TOLERANCE)
    lost.push(`resident memory grew from ${mib(baseline.rss)} to ${mib(last.rss)}`);
  count.lost(lost);
}, 85_000);
