/** Viewers watching a screen: the frames each receives per second, and what the servers spend on them. */
import { setTimeout as sleep } from "node:timers/promises";
import type { RfbPath } from "../proxy/paths.ts";
import { cpuMeter } from "./cpu.ts";
import { Viewer } from "./viewer.ts";

// x11vnc takes new clients one after another; many at once would wait past the proxy's handshake limit.
const OPENING_AT_ONCE = 8;

const SETTLE_MS = 1_000;

export interface Watched {
  /** Frames per second each viewer received over the window. */
  fps: number[];
  /** Screens' worth of pixels per second each viewer received (partial updates count in part). */
  screensPerSecond: number[];
  /** Bytes per second all viewers received together. */
  bytesPerSecond: number;
  /** CPU of each process asked about over the window, % of one core. */
  cpu: number[];
  /** CPU of this process (the viewers) over the window, % of one core. */
  viewersCpu: number;
}

/**
 * Opens `viewers` viewers on `path`, lets them follow the screen for `warmUpSeconds`, then counts
 * what each receives over `seconds` while metering `pids`.
 */
export async function watch(
  path: RfbPath,
  options: { viewers: number; warmUpSeconds: number; seconds: number; pids: readonly number[] },
): Promise<Watched> {
  const opened: Viewer[] = [];
  try {
    let next = 0;
    const opener = async () => {
      while (next++ < options.viewers) {
        const viewer = await Viewer.open(path);
        opened.push(viewer);
        await viewer.follow();
      }
    };
    await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, options.viewers) }, opener));
    await sleep(options.warmUpSeconds * 1000);
    const start = opened.map((viewer) => ({ ...viewer.counts }));
    const meter = cpuMeter([...options.pids, process.pid]);
    const started = performance.now();
    await sleep(options.seconds * 1000);
    const cpu = meter();
    const viewersCpu = cpu.pop() as number;
    const seconds = (performance.now() - started) / 1000;
    const failed = opened.find((viewer) => viewer.failure);
    if (failed) throw failed.failure;
    const since = (field: keyof Viewer["counts"]) =>
      opened.map((viewer, i) => (viewer.counts[field] - (start[i]?.[field] ?? 0)) / seconds);
    return {
      fps: since("frames"),
      screensPerSecond: since("screens"),
      bytesPerSecond: since("bytes").reduce((a, b) => a + b, 0),
      cpu,
      viewersCpu,
    };
  } finally {
    for (const viewer of opened) viewer.close();
  }
}

/**
 * Milliseconds from opening `path` to the first frame (connection, handshake and the first
 * whole-screen answer), then from a change on the idle screen (xdotool's own start included) to
 * the frame showing it; and the CPU the server `pid` used for the `idleSeconds` before the change,
 * watched but idle (from a second after the first frame).
 */
export async function answerTimes(
  path: RfbPath,
  server: { pid: number; change: () => Promise<void> },
  idleSeconds: number,
): Promise<{ first: number; change: number; idleCpu: number }> {
  const started = performance.now();
  const viewer = await Viewer.open(path);
  try {
    await viewer.follow();
    const first = performance.now() - started;
    // Past x11vnc's work for a new viewer, which is no part of watching an idle screen.
    await sleep(SETTLE_MS);
    const meter = cpuMeter([server.pid]);
    await sleep(idleSeconds * 1000);
    const [idleCpu] = meter() as [number];
    const shown = viewer.nextFrame().then(() => performance.now());
    // From before the change is asked for: the frame can arrive before xdotool has exited.
    const changed = performance.now();
    const [shownAt] = await Promise.all([shown, server.change()]);
    return { first, change: shownAt - changed, idleCpu };
  } finally {
    viewer.close();
  }
}

export const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

export const mean = (values: readonly number[]) =>
  values.reduce((sum, value) => sum + value, 0) / values.length;
