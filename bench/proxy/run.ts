/**
 * `npm run bench:proxy`: one RFB session from a real x11vnc, streamed directly, through websockify
 * and through the Cubicle proxy (capabilities redeemed at a real api, view-only filtering on).
 * Prints throughput, round-trip latency and memory per socket, with ratios.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import type { RfbClient } from "@cubicle/proxy/testing";
import { onAbort } from "../abort.ts";
import { printProfileSummary } from "../profile.ts";
import { envInteger, type MeasureRow, printMeasures, printTable, times } from "../report.ts";
import { connectRfb, percentile, roundTrips, type SocketMemory, socketMemory, transfer } from "./measure.ts";
import { directPath, proxyPath, type RfbPath, websockifyPath } from "./paths.ts";
import { startApiProcess, startDesktop, startProxyProcess, startWebsockify, stopAll } from "./processes.ts";

const SOCKETS = envInteger("BENCH_SOCKETS", 50, 1, 1_000);
// websockify is only the comparison here (a process per socket by default): more of them would cost
// gigabytes and minutes and say nothing new about the proxy.
const WEBSOCKIFY_SOCKETS = Math.min(SOCKETS, 200);
const WARMUP_SECONDS = 1;
const THROUGHPUT_SECONDS = envInteger("BENCH_PROXY_SECONDS", 4, 1, 600);
const LATENCY_SAMPLES = envInteger("BENCH_PROXY_ROUND_TRIPS", 300, 4, 100_000);
// The paths take turns in short rounds, so that a burst of load from elsewhere on the machine is
// spread over all of them instead of landing on whichever happened to be measured at the time.
const ROUNDS = 4;
// Past this something hangs, and waiting is no use; the default size stays well under three minutes.
const DEADLINE_MS = envInteger("BENCH_PROXY_DEADLINE_S", 150, 10, 7_200) * 1000;
/** BENCH_PROXY_CPU_PROF=1: the proxy runs under `node --cpu-prof`, and its profile is summarised at the end. */
const PROFILE = envInteger("BENCH_PROXY_CPU_PROF", 0, 0, 1) === 1;

const abort = onAbort("bench:proxy", DEADLINE_MS, stopAll);

/**
 * The proxy holds two descriptors per socket (browser, screen) and the bench one; children inherit
 * this process's limit, so a low one (Debian's default soft limit is 1,024) would refuse sockets
 * with EMFILE halfway instead of measuring.
 */
async function checkOpenFileLimit(): Promise<void> {
  const limits = await readFile("/proc/self/limits", "utf8");
  const soft = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1] ?? Number.POSITIVE_INFINITY);
  const needed = 2 * SOCKETS + 200;
  if (soft < needed)
    throw new Error(
      `BENCH_SOCKETS=${SOCKETS} needs about ${needed} open files; raise the limit (ulimit -n ${needed})`,
    );
}

interface Speed {
  name: string;
  mbPerSecond: number;
  p50: number;
  p99: number;
}

async function measureSpeeds(paths: readonly RfbPath[]): Promise<Speed[]> {
  const clients: RfbClient[] = [];
  try {
    for (const path of paths) clients.push(await connectRfb(path));
    for (const client of clients) await transfer(client, WARMUP_SECONDS);
    const totals = paths.map(() => ({ bytes: 0, seconds: 0, times: [] as number[] }));
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with a different path, so none is always the one measured first.
      for (let turn = 0; turn < paths.length; turn++) {
        const i = (round + turn) % paths.length;
        const [client, total] = [clients[i] as RfbClient, totals[i] as (typeof totals)[number]];
        const { bytes, seconds } = await transfer(client, THROUGHPUT_SECONDS / ROUNDS);
        total.bytes += bytes;
        total.seconds += seconds;
        total.times.push(...(await roundTrips(client, LATENCY_SAMPLES / ROUNDS)));
      }
    }
    return paths.map((path, i) => {
      const total = totals[i] as (typeof totals)[number];
      return {
        name: path.name,
        mbPerSecond: total.bytes / 1e6 / total.seconds,
        p50: percentile(total.times, 0.5),
        p99: percentile(total.times, 0.99),
      };
    });
  } finally {
    for (const client of clients) client.close();
  }
}

function printSpeeds(speeds: readonly Speed[]): void {
  const [direct, websockify, proxy] = speeds as [Speed, Speed, Speed];
  console.log(
    `\nThroughput: whole-screen non-incremental updates back to back, ${THROUGHPUT_SECONDS} s per path ` +
      `(after ${WARMUP_SECONDS} s warm-up). Latency: ${LATENCY_SAMPLES} round trips per path of a 16x16 ` +
      `non-incremental request. Paths take turns in ${ROUNDS} rounds. MB = 10^6 bytes.\n`,
  );
  printTable([
    ["path", "MB/s", "p50 ms", "p99 ms", "MB/s vs direct", "p50 vs direct", "p99 vs direct"],
    ...speeds.map((s) => [
      s.name,
      s.mbPerSecond.toFixed(1),
      s.p50.toFixed(2),
      s.p99.toFixed(2),
      times(s.mbPerSecond, direct.mbPerSecond),
      times(s.p50, direct.p50),
      times(s.p99, direct.p99),
    ]),
  ]);
  const compare = (base: Speed) =>
    `throughput ${times(proxy.mbPerSecond, base.mbPerSecond)}, p50 latency ${times(proxy.p50, base.p50)}, ` +
    `p99 latency ${times(proxy.p99, base.p99)}`;
  console.log(`\nproxy/direct:     ${compare(direct)}`);
  console.log(`proxy/websockify: ${compare(websockify)}`);
}

interface MemoryRow {
  server: string;
  /** How it serves connections, and so what was measured. */
  shape: string;
  sockets: number;
  memory: SocketMemory;
}

const perSocket = (row: MemoryRow, stage: "handshaken" | "updated", field: "rssKiB" | "pssKiB") =>
  (row.memory[stage][field] - row.memory.before[field]) / row.sockets;

function printMemory(rows: readonly MemoryRow[]): void {
  const [proxy, ...others] = rows as [MemoryRow, ...MemoryRow[]];
  console.log(
    `\nMemory per socket: ${SOCKETS} view sockets open at once in the proxy (${WEBSOCKIFY_SOCKETS} in ` +
      "each websockify); KiB per socket = (with them open - " +
      "before) / sockets, where before = after one warm-up socket came and went, measured once all are " +
      "past their handshake, and again once each has also had one whole-screen update. RSS sums VmRSS " +
      "over the processes measured (a page shared by forked processes counts once in each); PSS sums " +
      "proportional set sizes (a shared page is split between its sharers). The +update figures also " +
      "hold relayed frames' buffers that are garbage not yet collected or returned to the OS (for the " +
      "proxy some 30 MB in all, however many sockets), so past the handshake is the steadier cost.\n",
  );
  printTable(
    [
      [
        "server",
        "measured",
        "processes",
        "RSS before MiB",
        "RSS handshake",
        "RSS +update",
        "PSS handshake",
        "PSS +update",
      ],
      ...rows.map((row) => [
        row.server,
        row.shape,
        `${row.memory.before.processes} -> ${row.memory.updated.processes}`,
        (row.memory.before.rssKiB / 1024).toFixed(1),
        perSocket(row, "handshaken", "rssKiB").toFixed(0),
        perSocket(row, "updated", "rssKiB").toFixed(0),
        perSocket(row, "handshaken", "pssKiB").toFixed(0),
        perSocket(row, "updated", "pssKiB").toFixed(0),
      ]),
    ],
    2,
  );
  console.log("");
  const ratio = (other: MemoryRow, field: "rssKiB" | "pssKiB") =>
    `${times(perSocket(proxy, "updated", field), perSocket(other, "updated", field))} ` +
    `(${times(perSocket(proxy, "handshaken", field), perSocket(other, "handshaken", field))} past the handshake)`;
  for (const other of others)
    console.log(
      `proxy/${other.server} memory per socket: RSS ${ratio(other, "rssKiB")}, PSS ${ratio(other, "pssKiB")}`,
    );
}

/** Issue 21's rows for the screen path. */
function measures(speeds: readonly Speed[], proxyMemory: MemoryRow): MeasureRow[] {
  const [direct, websockify, proxy] = speeds as [Speed, Speed, Speed];
  const rate = (speed: Speed) => `${speed.mbPerSecond.toFixed(1)} MB/s`;
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  const throughput = (base: Speed, factor: number): MeasureRow => ({
    measure: `view-socket throughput vs ${base.name}`,
    reference: `${base.name} ${rate(base)}`,
    result: rate(proxy),
    ratio: times(proxy.mbPerSecond, base.mbPerSecond),
    target: `>= ${factor}x`,
    met: proxy.mbPerSecond >= factor * base.mbPerSecond,
  });
  const added = proxy.p50 - direct.p50;
  const handshaken = perSocket(proxyMemory, "handshaken", "rssKiB");
  return [
    throughput(direct, 0.85),
    throughput(websockify, 1.5),
    {
      measure: "p50 latency per round trip",
      reference: `direct ${ms(direct.p50)}`,
      result: `${ms(proxy.p50)} (${added >= 0 ? "+" : ""}${added.toFixed(2)})`,
      ratio: times(proxy.p50, direct.p50),
      target: "<= +0.2 ms",
      met: added <= 0.2,
    },
    {
      measure: "p99 latency per round trip",
      reference: `direct ${ms(direct.p99)}`,
      result: ms(proxy.p99),
      ratio: times(proxy.p99, direct.p99),
      target: "<= 1.2x",
      met: proxy.p99 <= 1.2 * direct.p99,
    },
    {
      // Every socket was let in, or the run would have failed.
      measure: `memory per view socket, ${SOCKETS} open`,
      reference: "—",
      result: `${handshaken.toFixed(0)} KiB (${perSocket(proxyMemory, "updated", "rssKiB").toFixed(0)} after an update)`,
      ratio: "—",
      target: "<= 64 KiB",
      met: handshaken <= 64,
    },
  ];
}

const loadAverage = async () => (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");

// Kept after the run: the profile opens as a flame graph in Chrome DevTools or speedscope.
const profileDir = PROFILE ? await mkdtemp(join(tmpdir(), "cubicle-bench-proxy-profile-")) : undefined;
try {
  await checkOpenFileLimit();
  const capabilityKey = randomBytes(32).toString("base64url");
  const [desktop, api] = await Promise.all([startDesktop(), startApiProcess(capabilityKey)]);
  const websockify = await startWebsockify(desktop.port);
  const threadedWebsockify = await startWebsockify(desktop.port, { threads: true });
  const proxy = await startProxyProcess(
    {
      SCREEN_CAPABILITY_KEY: capabilityKey,
      CUBICLE_API_URL: api.url,
      // All bench sockets come from one address and one subject; the defaults (32, 16) would refuse them.
      PROXY_MAX_SOCKETS_PER_IP: String(SOCKETS + 8),
      PROXY_MAX_SOCKETS_PER_SUBJECT: String(SOCKETS + 8),
    },
    profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
  );
  const paths = [
    directPath(desktop.port),
    websockifyPath(websockify.port),
    proxyPath(proxy.port, capabilityKey, desktop.port),
  ] as const;
  console.log(
    `bench:proxy — x11vnc on Xvfb ${desktop.display} (1280x800, 32 bpp, Raw; flags in processes.ts), an ` +
      `xterm scrolling random text; all on 127.0.0.1, ${availableParallelism()} CPUs, ` +
      `load average at start ${await loadAverage()}.`,
  );

  // Memory first, while no relay has yet been grown by the throughput runs.
  const memory: MemoryRow[] = [
    {
      server: "proxy",
      // Alone: tsx may keep an esbuild service as a child, which is no part of the proxy.
      shape: "its node process",
      sockets: SOCKETS,
      memory: await socketMemory(paths[2], { pid: proxy.pid, alone: true }, SOCKETS),
    },
    {
      server: "websockify",
      shape: "process tree, a fork per socket (default)",
      sockets: WEBSOCKIFY_SOCKETS,
      memory: await socketMemory(paths[1], websockify, WEBSOCKIFY_SOCKETS),
    },
    {
      server: "websockify --libserver",
      shape: "one process, a thread per socket",
      sockets: WEBSOCKIFY_SOCKETS,
      memory: await socketMemory(
        websockifyPath(threadedWebsockify.port),
        threadedWebsockify,
        WEBSOCKIFY_SOCKETS,
      ),
    },
  ];
  const speeds = await measureSpeeds(paths);
  printSpeeds(speeds);
  printMemory(memory);
  printMeasures(measures(speeds, memory[0] as MemoryRow));
  console.log(`\nLoad average at end ${await loadAverage()}.`);
} catch (error) {
  process.exitCode = 1;
  // Stopping the children makes whatever step was running fail too; that is no news.
  if (!abort.aborting)
    console.error(`bench:proxy failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
} finally {
  // The proxy writes its profile as it exits.
  await stopAll();
}
if (profileDir && !process.exitCode) await printProfileSummary("proxy", profileDir);
// Sockets a failed step left half-open must not keep the run alive.
process.exit();
