import type { Readable } from "node:stream";
import { FrameDemuxer } from "@cubicle/host/docker-frames";
import type Docker from "dockerode";
import { computerNotFound, computerStopped, SupervisorProblem } from "../../problems.ts";
import type { ComputerRef } from "../manager.ts";
import { dockerFailure, dockerStatus } from "./errors.ts";
import { collectExec } from "./exec.ts";
import { containerName, LABEL } from "./spec.ts";

export interface Found {
  container: Docker.Container;
  info: Docker.ContainerInspectInfo;
}

/** The container named for the home key, or null when there is none. */
export async function inspectByHomeKey(docker: Docker, homeKey: string): Promise<Found | null> {
  const container = docker.getContainer(containerName(homeKey));
  try {
    const info = await container.inspect();
    return { container: docker.getContainer(info.Id), info };
  } catch (error) {
    if (dockerStatus(error) === 404) return null;
    throw dockerFailure(`inspecting computer ${homeKey} failed`, error);
  }
}

export const isManaged = (info: Docker.ContainerInspectInfo) =>
  info.Config.Labels?.[LABEL.managed] === "true";

/** Whether the container was made for exactly this computer (labels are the only record). */
export function belongsTo(info: Docker.ContainerInspectInfo, ref: ComputerRef): boolean {
  const labels = info.Config.Labels ?? {};
  return (
    isManaged(info) &&
    labels[LABEL.homeKey] === ref.homeKey &&
    labels[LABEL.computerId] === ref.computerId &&
    labels[LABEL.workspaceId] === ref.workspaceId
  );
}

export const isRunning = (info: Docker.ContainerInspectInfo) => info.State.Running && !info.State.Paused;

/** The computer's container; COMPUTER_NOT_FOUND when missing or made for another computer. */
export async function findComputer(docker: Docker, ref: ComputerRef): Promise<Found> {
  const found = await inspectByHomeKey(docker, ref.homeKey);
  if (!found || !belongsTo(found.info, ref)) throw computerNotFound(ref.homeKey);
  return found;
}

/** Like findComputer, and COMPUTER_STOPPED unless it runs. */
export async function runningComputer(docker: Docker, ref: ComputerRef): Promise<Found> {
  const found = await findComputer(docker, ref);
  if (!isRunning(found.info)) throw computerStopped(ref.homeKey);
  return found;
}

const READY_SCRIPT = `[ -s /run/cubicle/screens/0/xvfb.pid ] && kill -0 "$(cat /run/cubicle/screens/0/xvfb.pid)" 2>/dev/null &&
grep -qi ":17C0 [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null`;

/** What the image's entry point prints once screen 0's display and view server are up (its `start`). */
const READY_LINE = "computer ready";
const BOOT_TIMEOUT_MS = 90_000;

/**
 * Waits until the computer has booted (screen 0's display and view server are up), so callers get
 * a computer they can use. One that exits while booting fails with its own last words. For a
 * computer already running: it asks the computer itself (an exec) every 250 ms.
 */
export async function waitUntilReady(
  container: Docker.Container,
  timeoutMs = BOOT_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await container.inspect();
    } catch (error) {
      throw dockerFailure("inspecting the booting computer failed", error);
    }
    if (!info.State.Running) throw await stoppedWhileBooting(container, info);
    const probe = await collectExec(container, ["sh", "-c", READY_SCRIPT], { timeoutMs: 10_000 }).catch(
      () => null,
    );
    if (probe?.code === 0) return;
    if (Date.now() > deadline) throw bootTimedOut(timeoutMs);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Reads the entry point's output as Docker multiplexes it, chunk by chunk; true once its stdout has
 * had READY_LINE as a whole line (a line split across chunks counts, one that only ends with it not).
 */
export function readyLineWatcher(): (chunk: Buffer) => boolean {
  const demuxer = new FrameDemuxer();
  // the line so far, cut to one character more than READY_LINE: a longer line never equals it
  let line = "";
  let seen = false;
  return (chunk) => {
    for (const piece of demuxer.push(chunk)) {
      if (piece.stream !== "stdout") continue;
      const lines = (line + piece.data.toString("utf8")).split("\n");
      line = (lines.pop() as string).slice(-READY_LINE.length - 1);
      if (lines.includes(READY_LINE)) seen = true;
    }
    return seen;
  };
}

export interface Boot {
  /** Resolves once the computer has booted; fails as waitUntilReady does. */
  ready: Promise<void>;
  /** Stops listening (always call it). */
  close(): void;
}

/**
 * Listens to a computer about to be started for its entry point's READY_LINE: called before the
 * start, it cannot miss the line, and it hears it the moment it is written, with nothing run in the
 * booting computer (an exec every 250 ms cost that computer CPU and the caller up to 400 ms).
 */
export async function watchBoot(container: Docker.Container, timeoutMs = BOOT_TIMEOUT_MS): Promise<Boot> {
  let output: Readable;
  try {
    // the response's stream, which dockerode types as a ReadWriteStream
    output = (await container.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
  } catch (error) {
    throw dockerFailure("attaching to the computer failed", error);
  }
  const sawReady = readyLineWatcher();
  let timer: NodeJS.Timeout | undefined;
  const heard = new Promise<"ready" | "ended" | "timeout">((resolve) => {
    output.on("data", (chunk: Buffer) => {
      if (sawReady(chunk)) resolve("ready");
    });
    output.once("end", () => resolve("ended"));
    output.once("close", () => resolve("ended"));
    output.once("error", () => resolve("ended"));
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  let closed = false;
  const ready = heard.then(async (outcome) => {
    // closed by its caller, who no longer waits: nothing more to find out
    if (outcome === "ready" || closed) return;
    if (outcome === "timeout") throw bootTimedOut(timeoutMs);
    let info: Docker.ContainerInspectInfo;
    try {
      info = await container.inspect();
    } catch (error) {
      throw dockerFailure("inspecting the booting computer failed", error);
    }
    // the stream broke but the computer runs: ask it
    if (info.State.Running) return waitUntilReady(container, timeoutMs);
    throw await stoppedWhileBooting(container, info);
  });
  // a caller that fails before awaiting `ready` must not leave it rejected and unheard
  ready.catch(() => undefined);
  return {
    ready,
    close: () => {
      closed = true;
      clearTimeout(timer);
      output.destroy();
    },
  };
}

async function stoppedWhileBooting(
  container: Docker.Container,
  info: Docker.ContainerInspectInfo,
): Promise<SupervisorProblem> {
  const log = await container
    .logs({ stdout: true, stderr: true, tail: 5 })
    .then((buffer) => demuxedText(buffer))
    .catch(() => "");
  return new SupervisorProblem(
    "COMPUTER_FAILURE",
    `the computer stopped while booting (exit ${info.State.ExitCode})${log ? `: ${log}` : ""}`,
  );
}

const bootTimedOut = (timeoutMs: number) =>
  new SupervisorProblem("COMPUTER_FAILURE", `the computer did not finish booting in ${timeoutMs / 1000} s`);

/** A container log (multiplexed, as a non-TTY container's is) as plain text. */
function demuxedText(buffer: Buffer): string {
  return new FrameDemuxer()
    .push(buffer)
    .map((piece) => piece.data.toString("utf8"))
    .join("")
    .trim()
    .replaceAll(/\s*\n\s*/g, " / ");
}
