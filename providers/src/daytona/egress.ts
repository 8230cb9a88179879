/**
 * Egress policies as Daytona's network settings (`networkBlockAll`, `networkAllowList`,
 * `domainAllowList`), which its runner enforces on the sandbox with iptables. Daytona has no deny
 * list: a sandbox is open, blocked, or lets through only its allow lists. So `default` (the public
 * internet without private ranges) cannot be expressed, and an allowlist holds IPv4 addresses and
 * CIDR blocks (at most 10) and domain names (at most 10), each allowing every port.
 */
import { isIP } from "node:net";
import type { Sandbox } from "@daytonaio/sdk";
import {
  type EgressAllowlistLimits,
  type EgressLevel,
  type EgressPolicy,
  ProviderError,
} from "../contract/index.ts";

export const DAYTONA_EGRESS: readonly EgressLevel[] = ["open", "allowlist", "offline"];

/** Daytona's cap on each of its two allow lists. */
const MAX_LIST = 10;

export const DAYTONA_EGRESS_ALLOWLIST: EgressAllowlistLimits = { ports: false, maxDestinations: MAX_LIST };

/** The names Daytona takes in a domain allow list: ASCII labels and an alphabetic top-level domain. */
const DAYTONA_DOMAIN = /^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,}$/;

/** Every field, so an update replaces the sandbox's settings whole. */
export type DaytonaNetwork = Required<Parameters<Sandbox["updateNetworkSettings"]>[0]>;

const unsupported = (message: string) => new ProviderError("EGRESS_UNSUPPORTED", message);

/** The network settings that carry `policy` on Daytona; EGRESS_UNSUPPORTED for what Daytona cannot hold. */
export function networkSettingsOf(policy: EgressPolicy): DaytonaNetwork {
  const blocked = { networkBlockAll: true, networkAllowList: "", domainAllowList: "" };
  if (policy.level === "open") return { ...blocked, networkBlockAll: false };
  if (policy.level === "offline") return blocked;
  if (policy.level !== "allowlist") {
    throw unsupported(
      `Daytona cannot enforce the ${policy.level} egress level (it has no deny list to refuse only private ranges); it enforces ${DAYTONA_EGRESS.join(", ")}`,
    );
  }
  // nothing listed lets nothing through; Daytona would read two empty lists as open
  if (policy.allow.length === 0) return blocked;
  const networks: string[] = [];
  const domains: string[] = [];
  for (const { host, ports } of policy.allow) {
    if (ports.length > 0)
      throw unsupported(
        `Daytona cannot narrow ${host} to ports: list it without ports (every port is then allowed)`,
      );
    const address = host.split("/")[0] ?? host;
    const version = isIP(address);
    if (version === 6) throw unsupported(`Daytona enforces IPv4 allow lists only: ${host} is IPv6`);
    if (version === 4) networks.push(host.includes("/") ? host : `${host}/32`);
    else if (DAYTONA_DOMAIN.test(host)) domains.push(host);
    else
      throw unsupported(
        `Daytona takes only ASCII domain names with an alphabetic top-level domain, not ${host}`,
      );
  }
  for (const [kind, list] of [
    ["IPv4 addresses or CIDR blocks", networks],
    ["domain names", domains],
  ] as const) {
    if (list.length > MAX_LIST)
      throw unsupported(
        `Daytona allows at most ${MAX_LIST} ${kind} in an allowlist; this one lists ${list.length}`,
      );
  }
  return { networkBlockAll: false, networkAllowList: networks.join(","), domainAllowList: domains.join(",") };
}

/** The settings a sandbox holds, to give them again: Daytona's runner does not restore them at a start. */
export function heldSettings(
  sandbox: Pick<Sandbox, "networkBlockAll" | "networkAllowList" | "domainAllowList">,
): DaytonaNetwork | null {
  const held = {
    networkBlockAll: sandbox.networkBlockAll === true,
    networkAllowList: sandbox.networkAllowList ?? "",
    domainAllowList: sandbox.domainAllowList ?? "",
  };
  const open = !held.networkBlockAll && held.networkAllowList === "" && held.domainAllowList === "";
  return open ? null : held;
}
