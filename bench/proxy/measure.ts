import { setTimeout as sleep } from "node:timers/promises";
import { Encoding, RfbClient } from "@cubicle/proxy/testing";
import type { RfbPath } from "./paths.ts";
import { type TreeMemory, treeMemory } from "./processes.ts";

export async function connectRfb(path: RfbPath): Promise<RfbClient> {
  // Pixels are counted, not kept: gathering each 4 MB frame into one buffer made the bench's own
  // client the busiest process on every path, on the two cores it shares with what it measures.
  const client = await RfbClient.connect(await path.open(), { discardPixels: true });
  // Raw only: every path then carries exactly the same bytes, with no encoder work to vary.
  client.setEncodings([Encoding.Raw]);
  return client;
}

interface Area {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * Reads FramebufferUpdates until all pixels of `area` have arrived, returning the bytes read. A
 * server may answer in several rectangles or updates; x11vnc was only seen to answer in one.
 */
async function readAnswer(client: RfbClient, area: Area): Promise<number> {
  let bytes = 0;
  let covered = 0;
  while (covered < area.width * area.height) {
    const rectangles = await client.readUpdate();
    bytes += 4;
    const bytesPerPixel = client.serverInit.pixelFormat.bitsPerPixel / 8;
    for (const r of rectangles) {
      bytes += 12 + (r.encoding === Encoding.Raw ? r.width * r.height * bytesPerPixel : 0);
      const inside =
        r.x >= area.x &&
        r.y >= area.y &&
        r.x + r.width <= area.x + area.width &&
        r.y + r.height <= area.y + area.height;
      if (inside && r.encoding === Encoding.Raw) covered += r.width * r.height;
    }
  }
  return bytes;
}

export interface Transfer {
  bytes: number;
  seconds: number;
}

/**
 * FramebufferUpdate bytes received while asking for the whole screen, non-incremental, for
 * `seconds`. One request at a time: a VNC server may merge requests that arrive before it answers,
 * and a client then waiting for an answer that never comes would hang the run.
 */
export async function transfer(client: RfbClient, seconds: number): Promise<Transfer> {
  const screen = { x: 0, y: 0, width: client.width, height: client.height };
  const start = performance.now();
  let bytes = 0;
  while (performance.now() - start < seconds * 1000) {
    client.requestUpdate(screen);
    bytes += await readAnswer(client, screen);
  }
  return { bytes, seconds: (performance.now() - start) / 1000 };
}

/** Milliseconds from a small non-incremental FramebufferUpdateRequest to its FramebufferUpdate. */
export async function roundTrips(client: RfbClient, count: number): Promise<number[]> {
  const columns = Math.floor(client.width / 16);
  const rows = Math.floor(client.height / 16);
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    // A random tile each time, so that an answer is not a repeat the server could have kept at hand.
    const tile = Math.floor(Math.random() * columns * rows);
    const area = { x: (tile % columns) * 16, y: Math.floor(tile / columns) * 16, width: 16, height: 16 };
    const start = performance.now();
    client.requestUpdate(area);
    await readAnswer(client, area);
    times.push(performance.now() - start);
  }
  return times;
}

export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

async function fullUpdate(client: RfbClient): Promise<void> {
  const screen = { x: 0, y: 0, width: client.width, height: client.height };
  client.requestUpdate(screen);
  await readAnswer(client, screen);
}

/** Runs `task` over `items`, at most `limit` at a time. */
async function eachLimited<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// x11vnc takes new clients one after another, a good fraction of a second each on a busy machine;
// fifty at once would leave the last waiting past the proxy's 10 s handshake limit.
const OPENING_AT_ONCE = 8;

export interface SocketMemory {
  /** Warmed by one viewer that came and went: code loaded, buffers pooled, JIT done. */
  before: TreeMemory;
  /** With every socket open, past its handshake. */
  handshaken: TreeMemory;
  /** With every socket open, each after one whole-screen update too. */
  updated: TreeMemory;
}

/** The memory of the process (or tree) serving `path` as `sockets` viewers open on it. */
export async function socketMemory(
  path: RfbPath,
  server: { pid: number; alone?: boolean },
  sockets: number,
): Promise<SocketMemory> {
  const settled = async () => {
    // Lets the relays finish with what they were sent before reading the memory they hold.
    await sleep(1_000);
    return treeMemory(server.pid, server);
  };
  const warmUp = await connectRfb(path);
  await fullUpdate(warmUp);
  warmUp.close();
  const before = await settled();
  const viewers = await eachLimited(
    Array.from({ length: sockets }, () => path),
    OPENING_AT_ONCE,
    connectRfb,
  );
  const handshaken = await settled();
  await eachLimited(viewers, OPENING_AT_ONCE, fullUpdate);
  const updated = await settled();
  for (const viewer of viewers) viewer.close();
  // The next measurement starts from a quiet desktop, not one still tearing these sockets down.
  await sleep(1_000);
  return { before, handshaken, updated };
}
