import { createHash } from "node:crypto";
import { CHROMIUM_SECCOMP } from "@cubicle/computer-image/seccomp";
import type Docker from "dockerode";
import type { DockerConfig } from "../../config.ts";
import { CONTAINER_HOME } from "../../paths.ts";
import type { ComputerRef } from "../manager.ts";
import { COMPUTER_USER } from "./exec.ts";

export const LABEL = {
  managed: "cubicle.managed",
  computerId: "cubicle.computerId",
  workspaceId: "cubicle.workspaceId",
  homeKey: "cubicle.homeKey",
  image: "cubicle.image",
  /** A hash of everything else the container was made with; a different one means "recreate". */
  spec: "cubicle.spec",
} as const;

/** The 16 ports of the 8 screens: view 6080+2i, control 6081+2i. */
export const SCREEN_PORTS = Array.from({ length: 16 }, (_, i) => 6080 + i);

export const containerName = (homeKey: string) => `cubicle-${homeKey}`;

/** Chromium and the X servers share memory through /dev/shm; Docker's 64 MB default crashes tabs. */
export const SHM_BYTES = 256 * 1024 * 1024;

/**
 * How a computer's container is made (docs/architecture.md, "The Docker computer"): the image's
 * non-root user, no new privileges, every capability dropped (the image needs none: everything in
 * it runs as that user), memory, CPU and process limits, the home bind-mounted, the screen ports
 * published only on the screen host address (loopback by default) on ports Docker picks.
 */
export function containerSpec(
  config: DockerConfig,
  ref: ComputerRef,
  imageId: string,
  homeDir: string,
): Docker.ContainerCreateOptions & { Labels: Record<string, string> } {
  const memory = config.memoryMb * 1024 * 1024;
  const spec = {
    Image: imageId,
    Hostname: "computer",
    User: COMPUTER_USER,
    Env: ["LANG=C.UTF-8"],
    ExposedPorts: Object.fromEntries(SCREEN_PORTS.map((port) => [`${port}/tcp`, {}])),
    HostConfig: {
      Binds: [`${homeDir}:${CONTAINER_HOME}`],
      // a fresh /tmp at every start: X servers leave lock files there that would stop the next
      // boot (their old pids belong to other processes in the new pid namespace)
      Tmpfs: { "/tmp": "rw,nosuid,nodev,mode=1777,size=512m" },
      ShmSize: SHM_BYTES,
      // Docker's default seccomp rules plus the namespaces Chromium's own sandbox needs
      SecurityOpt: ["no-new-privileges", CHROMIUM_SECCOMP],
      CapDrop: ["ALL"],
      Memory: memory,
      // no swap on top of the memory limit
      MemorySwap: memory,
      NanoCpus: Math.round(config.cpus * 1e9),
      PidsLimit: config.pidsLimit,
      PortBindings: Object.fromEntries(
        SCREEN_PORTS.map((port) => [`${port}/tcp`, [{ HostIp: config.screenHost, HostPort: "" }]]),
      ),
      NetworkMode: config.network,
      // Docker's embedded resolver forwards here from the computer's own network namespace, so
      // the egress rules see (and allow) exactly these servers
      Dns: [...config.dns],
      RestartPolicy: { Name: "no" },
      // the entry point's log only says when screens restart; keep it from growing without end
      LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "2" } },
    },
  } satisfies Docker.ContainerCreateOptions;
  return {
    ...spec,
    name: containerName(ref.homeKey),
    Labels: {
      [LABEL.managed]: "true",
      [LABEL.computerId]: ref.computerId,
      [LABEL.workspaceId]: ref.workspaceId,
      [LABEL.homeKey]: ref.homeKey,
      [LABEL.image]: imageId,
      [LABEL.spec]: createHash("sha256").update(JSON.stringify(spec)).digest("hex").slice(0, 16),
    },
  };
}

/**
 * Host ports on `screenHost` by container port, from `docker inspect` (they change each time the
 * container starts).
 */
export function hostPorts(info: Docker.ContainerInspectInfo, screenHost: string): Record<string, number> {
  const ports: Record<string, number> = {};
  for (const [key, bindings] of Object.entries(info.NetworkSettings?.Ports ?? {})) {
    const binding = bindings?.find((b) => b.HostIp === screenHost);
    const port = Number(binding?.HostPort);
    if (Number.isInteger(port) && port > 0) ports[key.replace("/tcp", "")] = port;
  }
  return ports;
}
