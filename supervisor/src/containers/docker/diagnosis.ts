import { readdir } from "node:fs/promises";
import { CHROMIUM_SECCOMP } from "@cubicle/computer-image/seccomp";
import { COMPUTER_IMAGE_DIR, imageVersion } from "@cubicle/computer-image/version";
import { byName } from "@cubicle/providers/kernel";
import type { ComputerCheck, Diagnosis, Health } from "@cubicle/providers/supervisor-wire";
import type Docker from "dockerode";
import type { DockerConfig } from "../../config.ts";
import { checkDataDirMount } from "./data-dir-mount.ts";
import { dockerFailure } from "./errors.ts";
import { collectExec } from "./exec.ts";
import { containerSpec, hostPorts, LABEL, SCREEN_PORTS, SHM_BYTES } from "./spec.ts";

/**
 * `cubicle doctor`'s questions that only the socket answers: which image computers are made from,
 * whether each computer of this supervisor still meets the spec it was made with, and which
 * containers sit on the computers' network without being the supervisor's.
 */
export async function diagnose(
  docker: Docker,
  config: DockerConfig,
  health: Health,
  mountinfo?: string,
): Promise<Diagnosis> {
  try {
    const computers = await ownComputers(docker, config);
    return {
      health,
      hostFirewall: health.hostFirewall === "on" ? "on" : await hostFirewallSeen(docker, config, computers),
      imageVersion: { built: await builtVersion(docker, health), expected: shippedVersion() },
      dataDirProblem: await checkDataDirMount(docker, config.dataDir, mountinfo).then(
        () => null,
        (error: unknown) => (error instanceof Error ? error.message : String(error)),
      ),
      homes: await homeFolders(config.homesDir),
      computers: computers.map(({ check }) => check),
      strangers: await strangers(docker, config.network),
    };
  } catch (error) {
    throw dockerFailure("diagnosing the computers failed", error);
  }
}

async function builtVersion(docker: Docker, health: Health): Promise<string | null> {
  if (!health.image.id) return null;
  const info = await docker.getImage(health.image.id).inspect();
  return info.Config.Labels?.["cubicle.image.version"] ?? null;
}

/** The version of the image's sources shipped beside this supervisor (a checkout, or its image). */
function shippedVersion(): string | null {
  try {
    return imageVersion(COMPUTER_IMAGE_DIR);
  } catch {
    return null;
  }
}

async function homeFolders(homesDir: string): Promise<string[]> {
  try {
    const entries = await readdir(homesDir, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return [];
    throw error;
  }
}

/**
 * Computers whose home is under this supervisor's DATA_DIR: other supervisors on the same engine
 * (another deployment, a test's) make computers with their own settings, which are not ours to judge.
 */
async function ownComputers(
  docker: Docker,
  config: DockerConfig,
): Promise<{ info: Docker.ContainerInspectInfo; check: ComputerCheck }[]> {
  const listed = await docker.listContainers({ all: true, filters: { label: [`${LABEL.managed}=true`] } });
  const image = await docker
    .getImage(config.image)
    .inspect()
    .catch(() => null);
  const own: { info: Docker.ContainerInspectInfo; check: ComputerCheck }[] = [];
  for (const summary of listed) {
    const info = await docker.getContainer(summary.Id).inspect();
    const homeBind = (info.HostConfig.Binds ?? []).find((bind) => bind.startsWith(`${config.homesDir}/`));
    if (!homeBind) continue;
    const labels = info.Config.Labels ?? {};
    const ref = {
      homeKey: labels[LABEL.homeKey] ?? "",
      computerId: labels[LABEL.computerId] ?? "",
      workspaceId: labels[LABEL.workspaceId] ?? "",
    };
    const madeImage = labels[LABEL.image] ?? "";
    const today = containerSpec(config, ref, madeImage, homeBind.split(":")[0] ?? "");
    own.push({
      info,
      check: {
        name: info.Name.replace(/^\//, ""),
        homeKey: ref.homeKey,
        status: info.State.Running ? "running" : "stopped",
        imageCurrent: image !== null && madeImage === image.Id,
        settingsCurrent: labels[LABEL.spec] === today.Labels[LABEL.spec],
        problems: departures(info, config),
      },
    });
  }
  return own.sort((a, b) => byName(a.check, b.check));
}

/**
 * A computer's own try at the host: its screen port, published on the screen address (a host
 * address; loopback is out of a container's reach whatever the rules, so it tells nothing).
 * Reaching it means the host takes computers' connections; refused means the rule holds.
 */
async function hostFirewallSeen(
  docker: Docker,
  config: DockerConfig,
  computers: { info: Docker.ContainerInspectInfo }[],
): Promise<"off" | "on" | "unknown"> {
  if (config.screenHost.startsWith("127.")) return "unknown";
  const running = computers.find(({ info }) => info.State.Running);
  const port = running && hostPorts(running.info, config.screenHost)[String(SCREEN_PORTS[0])];
  if (!running || !port) return "unknown";
  const probe = `exec 3<>/dev/tcp/${config.screenHost}/${port}`;
  const result = await collectExec(docker.getContainer(running.info.Id), ["bash", "-c", probe], {
    timeoutMs: 5_000,
  });
  return result.code === 0 ? "off" : "on";
}

/** What of the container, as Docker holds it now, breaks the spec (spec.ts) computers are made to. */
export function departures(info: Docker.ContainerInspectInfo, config: DockerConfig): string[] {
  const problems: string[] = [];
  const host = info.HostConfig;
  const user = (info.Config.User ?? "").split(":")[0] ?? "";
  if (["", "0", "root"].includes(user)) problems.push("runs as root");
  if (host.Privileged) problems.push("is privileged");
  if (!(host.CapDrop ?? []).some((cap: string) => cap.toUpperCase() === "ALL"))
    problems.push("keeps Linux capabilities (they are not all dropped)");
  if ((host.CapAdd ?? []).length > 0) problems.push(`adds capabilities ${(host.CapAdd ?? []).join(", ")}`);
  if (!(host.SecurityOpt ?? []).some((option: string) => option.startsWith("no-new-privileges")))
    problems.push("may gain privileges (no no-new-privileges)");
  if (!(host.SecurityOpt ?? []).includes(CHROMIUM_SECCOMP))
    problems.push("runs under another seccomp profile than the computers' (computer-image/seccomp)");
  if (host.ShmSize !== SHM_BYTES)
    problems.push(`has ${Math.round((host.ShmSize ?? 0) / 2 ** 20)} MB of shared memory, not 256 MB`);
  if (host.NetworkMode !== config.network)
    problems.push(`is on network ${host.NetworkMode}, not ${config.network}`);
  for (const [port, bindings] of Object.entries(host.PortBindings ?? {}) as [
    string,
    { HostIp?: string }[],
  ][]) {
    for (const binding of bindings ?? []) {
      if (binding.HostIp !== config.screenHost)
        problems.push(
          `publishes ${port} on ${binding.HostIp || "every address"}, not only ${config.screenHost}`,
        );
    }
  }
  return problems;
}

async function strangers(docker: Docker, network: string): Promise<Diagnosis["strangers"]> {
  const attached = await docker.listContainers({ all: true, filters: { network: [network] } });
  return attached
    .filter((container) => container.Labels?.[LABEL.managed] !== "true")
    .map((container) => ({
      name: (container.Names[0] ?? container.Id).replace(/^\//, ""),
      image: container.Image,
    }))
    .sort(byName);
}
