/**
 * `node --import tsx bench/screen/run.ts`: what a viewer of a busy screen gets. A "video" plays on a
 * host Xvfb (Chromium, kiosk mode, a canvas repainting the whole screen 30 times a second) served
 * by x11vnc with the computer image's view-server flags (read from start_view in lib.sh), once as
 * the image has them and once with x11vnc's default pacing ("before"). noVNC-like viewers
 * (bench/screen/viewer.ts) watch it directly and through the real proxy (a view capability
 * redeemed at a real api, the view filter on). Prints the frames per second each viewer receives,
 * alone and 50 at once, what the proxy and x11vnc spend on them, and how long the first answer and
 * a change take on an idle screen.
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { onAbort } from "../abort.ts";
import { directPath, proxyPath } from "../proxy/paths.ts";
import { startApiProcess, startDisplay, startProxyProcess, stopAll } from "../proxy/processes.ts";
import { envInteger, type MeasureRow, printMeasures, printTable, times } from "../report.ts";
import { idleWindow, playVideo, startX11vnc, type VncServer } from "./desktop.ts";
import { viewFlags } from "./flags.ts";
import { answerTimes, mean, median, type Watched, watch } from "./watch.ts";

const SECONDS = envInteger("BENCH_SCREEN_SECONDS", 5, 1, 600);
const VIEWERS = envInteger("BENCH_SCREEN_VIEWERS", 50, 2, 500);
const ANSWERS = envInteger("BENCH_SCREEN_ANSWERS", 4, 1, 100);
const DEADLINE_MS = envInteger("BENCH_SCREEN_DEADLINE_S", 300, 10, 7_200) * 1000;
const WARM_UP_SECONDS = 2;
// Long enough for x11vnc to settle into its idle pacing between a viewer's first frame and a change.
const IDLE_SECONDS = 2;

const abort = onAbort("bench:screen", DEADLINE_MS, stopAll);
const loadAverage = async () => (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");
const fps = (value: number) => `${value.toFixed(1)} fps`;
const ms = (value: number) => `${value.toFixed(0)} ms`;
const percent = (value: number) => `${value.toFixed(1)} %`;

interface FanOut {
  pacing: string;
  path: "direct" | "proxy";
  viewers: number;
  watched: Watched;
}

interface Pacing {
  name: string;
  video: VncServer;
  idle: VncServer;
  direct?: Watched;
  proxy?: Watched;
  first: number[];
  change: number[];
  idleCpu: number[];
}

try {
  const capabilityKey = randomBytes(32).toString("base64url");
  const flags = viewFlags();
  const [videoDisplay, idleDisplay, api] = await Promise.all([
    startDisplay(),
    startDisplay(),
    startApiProcess(capabilityKey),
  ]);
  const [drawn, idle] = await Promise.all([playVideo(videoDisplay), idleWindow(idleDisplay)]);
  const proxy = await startProxyProcess({
    SCREEN_CAPABILITY_KEY: capabilityKey,
    CUBICLE_API_URL: api.url,
    // All bench viewers come from one address and one subject; the defaults (32, 16) would refuse them.
    PROXY_MAX_SOCKETS_PER_IP: String(VIEWERS + 8),
    PROXY_MAX_SOCKETS_PER_SUBJECT: String(VIEWERS + 8),
  });
  const pacings: Pacing[] = [];
  for (const [name, args] of [
    ["before", flags.before],
    ["image", flags.tuned],
  ] as const) {
    const [video, idleServer] = await Promise.all([
      startX11vnc(videoDisplay, args),
      startX11vnc(idleDisplay, args),
    ]);
    pacings.push({ name, video, idle: idleServer, first: [], change: [], idleCpu: [] });
  }
  const paths = (server: VncServer) => ({
    direct: directPath(server.port),
    proxy: proxyPath(proxy.port, capabilityKey, server.port),
  });
  console.log(
    `bench:screen — Chromium playing a canvas "video" on Xvfb ${videoDisplay} (1280x800x24), x11vnc with ` +
      `the image's view flags (${flags.tuned.join(" ")}) and without their pacing (before); viewers ask as ` +
      `noVNC does (Tight, quality 6). ${availableParallelism()} CPUs, load average at start ${await loadAverage()}.`,
  );

  // Pacing, one viewer at a time; the flag sets and paths take turns.
  const one = { viewers: 1, warmUpSeconds: WARM_UP_SECONDS, seconds: SECONDS };
  for (const pacing of pacings) {
    const { direct, proxy: viaProxy } = paths(pacing.video);
    pacing.direct = await watch(direct, { ...one, pids: [pacing.video.pid, proxy.pid] });
    pacing.proxy = await watch(viaProxy, { ...one, pids: [pacing.video.pid, proxy.pid] });
  }
  const pageFps = await drawn();
  // While no viewer is connected x11vnc looks for one every 200 ms (a sleep in its main loop that
  // no pacing flag changes), so the first answer includes up to that wait on either side.
  for (let i = 0; i < ANSWERS; i++)
    for (const pacing of pacings) {
      const times = await answerTimes(
        paths(pacing.idle).direct,
        { pid: pacing.idle.pid, change: idle.change },
        IDLE_SECONDS,
      );
      pacing.first.push(times.first);
      pacing.change.push(times.change);
      pacing.idleCpu.push(times.idleCpu);
    }

  // Fan-out: one viewer through the proxy, then VIEWERS at once directly and through it, with the
  // image's flags; and through it with the default pacing.
  const [before, image] = pacings as [Pacing, Pacing];
  const fanOut: FanOut[] = [];
  for (const [pacing, path, viewers] of [
    [image, "proxy", 1],
    [image, "direct", VIEWERS],
    [image, "proxy", VIEWERS],
    [before, "proxy", VIEWERS],
  ] as const) {
    const watched = await watch(paths(pacing.video)[path], {
      viewers,
      warmUpSeconds: WARM_UP_SECONDS + 1,
      seconds: SECONDS,
      pids: [pacing.video.pid, proxy.pid],
    });
    fanOut.push({ pacing: pacing.name, path, viewers, watched });
  }

  console.log(
    `\nOne viewer, ${SECONDS} s after ${WARM_UP_SECONDS} s warm-up; a frame is a FramebufferUpdate with ` +
      `pixels. The page drew ${pageFps ?? "?"} frames in its last second. First answer: opening a direct ` +
      `connection to x11vnc on the idle screen until its first whole-screen update; change: an xterm moved ` +
      `after ${IDLE_SECONDS + 1} s idle until the update showing it (xdotool's start included); medians of ` +
      `${ANSWERS}; idle x11vnc CPU: over the last ${IDLE_SECONDS} s before the change. CPU in % of one core.\n`,
  );
  printTable([
    [
      "x11vnc pacing",
      "direct fps",
      "proxy fps",
      "proxy/direct",
      "screens/s direct",
      "screens/s proxy",
      "x11vnc CPU",
      "proxy CPU",
      "first answer",
      "change",
      "idle x11vnc CPU",
    ],
    ...pacings.map((p) => {
      const [direct, viaProxy] = [p.direct as Watched, p.proxy as Watched];
      return [
        p.name,
        (direct.fps[0] as number).toFixed(1),
        (viaProxy.fps[0] as number).toFixed(1),
        times(viaProxy.fps[0] as number, direct.fps[0] as number),
        (direct.screensPerSecond[0] as number).toFixed(1),
        (viaProxy.screensPerSecond[0] as number).toFixed(1),
        percent(viaProxy.cpu[0] as number),
        percent(viaProxy.cpu[1] as number),
        ms(median(p.first)),
        ms(median(p.change)),
        percent(mean(p.idleCpu)),
      ];
    }),
  ]);
  console.log(`\nimage's pacing flags: ${flags.pacing.join(" ") || "(none)"}`);

  console.log(
    `\nFan-out: ${SECONDS} s after ${WARM_UP_SECONDS + 1} s warm-up. fps per viewer: mean (min-max); ` +
      "screens/s: screens' worth of pixels each viewer received per second (partial updates count in part).\n",
  );
  printTable([
    [
      "x11vnc pacing",
      "path",
      "viewers",
      "fps per viewer",
      "screens/s",
      "all viewers",
      "MB/s",
      "KB/frame",
      "x11vnc CPU",
      "proxy CPU",
      "proxy CPU per viewer",
      "proxy CPU per MB/s",
      "viewers' CPU",
    ],
    ...fanOut.map(({ pacing, path, viewers, watched }) => [
      pacing,
      path,
      String(viewers),
      `${mean(watched.fps).toFixed(1)} (${Math.min(...watched.fps).toFixed(1)}-${Math.max(...watched.fps).toFixed(1)})`,
      mean(watched.screensPerSecond).toFixed(1),
      watched.fps.reduce((a, b) => a + b, 0).toFixed(0),
      (watched.bytesPerSecond / 1e6).toFixed(1),
      (watched.bytesPerSecond / 1e3 / watched.fps.reduce((a, b) => a + b, 0)).toFixed(0),
      percent(watched.cpu[0] as number),
      path === "proxy" ? percent(watched.cpu[1] as number) : "—",
      path === "proxy" ? `${((watched.cpu[1] as number) / viewers).toFixed(2)} %` : "—",
      path === "proxy" ? percent((watched.cpu[1] as number) / (watched.bytesPerSecond / 1e6)) : "—",
      percent(watched.viewersCpu),
    ]),
  ]);

  printMeasures(measures(pacings, fanOut));
  console.log(`\nLoad average at end ${await loadAverage()}.`);
} catch (error) {
  process.exitCode = 1;
  if (!abort.aborting)
    console.error(`bench:screen failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
} finally {
  await stopAll();
}
process.exit();

function measures(pacings: readonly Pacing[], fanOut: readonly FanOut[]): MeasureRow[] {
  const [before, image] = pacings as [Pacing, Pacing];
  const [alone, , many] = fanOut as [FanOut, FanOut, FanOut];
  const aloneFps = alone.watched.fps[0] as number;
  const manyFps = mean(many.watched.fps);
  const direct = image.direct?.fps[0] as number;
  const viaProxy = image.proxy?.fps[0] as number;
  const beforeProxy = before.proxy?.fps[0] as number;
  return [
    {
      measure: `one screen watched by ${many.viewers} viewers`,
      reference: `one viewer ${fps(aloneFps)}`,
      result: `${fps(manyFps)} each (min ${Math.min(...many.watched.fps).toFixed(1)}), proxy CPU ${((many.watched.cpu[1] as number) / many.viewers).toFixed(2)} %/viewer`,
      ratio: times(manyFps, aloneFps),
      target: "fps within 10 %",
      met: manyFps >= 0.9 * aloneFps,
    },
    {
      measure: "frames per second while a video plays",
      reference: `x11vnc direct ${fps(direct)}`,
      result: `proxy ${fps(viaProxy)}`,
      ratio: times(viaProxy, direct),
      target: ">= 0.9x",
      met: viaProxy >= 0.9 * direct,
    },
    {
      measure: "video fps through the proxy, x11vnc pacing tuned",
      reference: `default pacing ${fps(beforeProxy)}`,
      result: fps(viaProxy),
      ratio: times(viaProxy, beforeProxy),
      target: "—",
      met: undefined,
    },
    {
      measure: "first answer of an idle screen, x11vnc pacing tuned",
      reference: `default pacing ${ms(median(before.first))}`,
      result: ms(median(image.first)),
      ratio: times(median(image.first), median(before.first)),
      target: "—",
      met: undefined,
    },
  ];
}
