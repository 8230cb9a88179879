import type Docker from "dockerode";
import { computerNotFound, computerStopped, SupervisorProblem } from "../../problems.ts";
import type { ComputerRef } from "../manager.ts";
import { FrameDemuxer } from "./demux.ts";
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

/**
 * Waits until the computer has booted (screen 0's display and view server are up), so callers get
 * a computer they can use. One that exits while booting fails with its own last words.
 */
export async function waitUntilReady(container: Docker.Container, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await container.inspect();
    } catch (error) {
      throw dockerFailure("inspecting the booting computer failed", error);
    }
    if (!info.State.Running) {
      const log = await container
        .logs({ stdout: true, stderr: true, tail: 5 })
        .then((buffer) => demuxedText(buffer))
        .catch(() => "");
      throw new SupervisorProblem(
        "COMPUTER_FAILURE",
        `the computer stopped while booting (exit ${info.State.ExitCode})${log ? `: ${log}` : ""}`,
      );
    }
    const probe = await collectExec(container, ["sh", "-c", READY_SCRIPT], { timeoutMs: 10_000 }).catch(
      () => null,
    );
    if (probe?.code === 0) return;
    if (Date.now() > deadline) {
      throw new SupervisorProblem(
        "COMPUTER_FAILURE",
        `the computer did not finish booting in ${timeoutMs / 1000} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A container log (multiplexed, as a non-TTY container's is) as plain text. */
function demuxedText(buffer: Buffer): string {
  return new FrameDemuxer()
    .push(buffer)
    .map((piece) => piece.data.toString("utf8"))
    .join("")
    .trim()
    .replaceAll(/\s*\n\s*/g, " / ");
}
