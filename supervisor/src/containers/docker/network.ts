import { BRIDGE_NAME } from "@cubicle/host/host-firewall";
import type Docker from "dockerode";
import { dockerFailure, dockerStatus } from "./errors.ts";

/**
 * The computers' network: a bridge on which computers cannot reach each other (no inter-container
 * traffic). It is not `internal`: Docker publishes no ports for internal networks (the screens'
 * loopback ports would vanish), and an internal bridge still lets computers reach the host's own
 * addresses. Reaching the host is closed by the host firewall rule instead (@cubicle/host/host-firewall).
 */
export async function ensureNetwork(docker: Docker, name: string): Promise<void> {
  try {
    await docker.getNetwork(name).inspect();
    return;
  } catch (error) {
    if (dockerStatus(error) !== 404) throw dockerFailure(`inspecting network ${name} failed`, error);
  }
  try {
    await docker.createNetwork({
      Name: name,
      Driver: "bridge",
      CheckDuplicate: true,
      Labels: { "cubicle.managed": "true" },
      Options: {
        "com.docker.network.bridge.enable_icc": "false",
        "com.docker.network.bridge.name": name === "cubicle-computers" ? BRIDGE_NAME : name.slice(0, 15),
      },
    });
  } catch (error) {
    // another supervisor made it first
    if (dockerStatus(error) === 409) return;
    throw dockerFailure(`creating network ${name} failed`, error);
  }
}

/** The bridge interface of an existing network (Docker names it br-<id> unless told otherwise). */
export async function bridgeOf(docker: Docker, name: string): Promise<string | null> {
  try {
    const info = await docker.getNetwork(name).inspect();
    const options = (info as { Options?: Record<string, string>; Id?: string }).Options ?? {};
    const id = (info as { Id?: string }).Id ?? "";
    return options["com.docker.network.bridge.name"] ?? (id ? `br-${id.slice(0, 12)}` : null);
  } catch {
    return null;
  }
}

/** The network's IPv4 subnet (the computers' addresses). */
export async function subnetOf(docker: Docker, name: string): Promise<string | null> {
  try {
    const info = await docker.getNetwork(name).inspect();
    const configs = (info as { IPAM?: { Config?: { Subnet?: string }[] } }).IPAM?.Config ?? [];
    return configs.find((config) => config.Subnet?.includes("."))?.Subnet ?? null;
  } catch {
    return null;
  }
}

/** The container's IPv4 address on the network; it may change each time the container starts. */
export function addressOf(info: Docker.ContainerInspectInfo, network: string): string | null {
  return info.NetworkSettings?.Networks?.[network]?.IPAddress || null;
}
