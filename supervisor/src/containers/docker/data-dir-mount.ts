import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "@cubicle/config";
import type Docker from "dockerode";
import { dockerFailure } from "./errors.ts";

/**
 * The id of the container this process runs in, or null on a host. Docker bind-mounts each
 * container's own `…/containers/<id>/hostname` file at `/etc/hostname`, which names it whatever the
 * hostname was set to. Only that mount point counts: a host's table may briefly show another
 * container's hostname file mounted elsewhere (seen while tests made network namespaces), which
 * must not make a supervisor on the host believe it runs in that container.
 */
export function ownContainerId(mountinfo: string): string | null {
  return /\/containers\/([0-9a-f]{64})\/hostname \/etc\/hostname\s/.exec(mountinfo)?.[1] ?? null;
}

/**
 * The engine resolves a computer's home (`DATA_DIR/homes/<key>`) on the Docker host, not in this
 * container: run in a container, the supervisor's DATA_DIR must be the host's folder of the same
 * path, or every computer would get a home the supervisor never sees. Checked at start, so a wrong
 * mount stops the supervisor with the fix instead of losing files.
 */
export async function checkDataDirMount(docker: Docker, dataDir: string, mountinfo?: string): Promise<void> {
  let id: string | null;
  try {
    id = ownContainerId(mountinfo ?? readFileSync("/proc/self/mountinfo", "utf8"));
  } catch {
    id = null;
  }
  if (id === null) return;
  let mounts: { Type?: string; Name?: string; Source: string; Destination: string }[];
  try {
    mounts = (await docker.getContainer(id).inspect()).Mounts ?? [];
  } catch (error) {
    throw dockerFailure("inspecting the supervisor's own container failed", error);
  }
  const within = (folder: string) => dataDir === folder || dataDir.startsWith(`${folder}/`);
  const mount = mounts
    .filter((candidate) => within(candidate.Destination))
    .sort((a, b) => b.Destination.length - a.Destination.length)[0];
  const fix = `mount the host's folder at the same path (for example \`${dataDir}:${dataDir}\`)`;
  if (!mount) {
    throw new ConfigError([
      `DATA_DIR ${dataDir} is not mounted from the Docker host, but computers' homes are bind-mounted from host paths; ${fix}`,
    ]);
  }
  const hostPath = path.join(await hostSource(docker, mount), path.relative(mount.Destination, dataDir));
  if (hostPath !== dataDir) {
    throw new ConfigError([
      `DATA_DIR ${dataDir} is the Docker host's ${hostPath}, but computers' homes are bind-mounted by host path; ${fix}`,
    ]);
  }
}

/**
 * Where a mount's files are on the host: a bind mount's source, or the folder a named volume binds
 * (`driver_opts: {type: none, o: bind, device: …}`); any other volume lives under the engine's own
 * folder, which is never the same path inside.
 */
async function hostSource(
  docker: Docker,
  mount: { Type?: string; Name?: string; Source: string },
): Promise<string> {
  if (mount.Type !== "volume" || !mount.Name) return mount.Source;
  try {
    const options = (await docker.getVolume(mount.Name).inspect()).Options ?? {};
    return options.o?.split(",").includes("bind") && options.device ? options.device : mount.Source;
  } catch (error) {
    throw dockerFailure(`inspecting volume ${mount.Name} failed`, error);
  }
}
