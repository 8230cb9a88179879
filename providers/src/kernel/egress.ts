import { isIP } from "node:net";
import { z } from "zod";
import {
  EGRESS_LEVELS,
  type EgressLevel,
  type EgressPolicy,
  type MachineRef,
  type ProviderCapabilities,
  ProviderError,
  type SandboxProvider,
} from "../contract/index.ts";

/** Every level: what a backend whose enforcing side takes the whole policy lists in its capabilities. */
export const ALL_EGRESS_LEVELS: readonly EgressLevel[] = EGRESS_LEVELS;

/**
 * Backends that enforce nothing of their own (the host's desktop; vendors not yet mapped): the
 * machine reaches whatever its host or vendor lets it, which is `open` and nothing stricter.
 */
export const OPEN_EGRESS_ONLY: readonly EgressLevel[] = ["open"];

/** Refuses, before anything is applied, a level the backend cannot enforce: the one rule for every backend. */
export function requireEnforceable(capabilities: ProviderCapabilities, policy: EgressPolicy): void {
  if (capabilities.egress.includes(policy.level)) return;
  throw new ProviderError(
    "EGRESS_UNSUPPORTED",
    `this provider cannot enforce the egress level ${policy.level}; it enforces ${capabilities.egress.join(", ")}`,
  );
}

/**
 * `setEgress` of a backend that enforces only `open`: there is nothing to apply, but the contract
 * holds as everywhere (a stricter level refused, an unknown machine missing).
 */
export async function setOpenEgress(provider: SandboxProvider, ref: MachineRef, policy: EgressPolicy) {
  requireEnforceable(provider.capabilities, policy);
  if ((await provider.status(ref)) === "missing")
    throw new ProviderError("MACHINE_MISSING", `no machine ${ref.providerRef ?? "(none)"} for this home`);
}

const HOSTNAME = z.hostname();

/**
 * Why `host` is no allowed destination, or null when it is one: a DNS name, an IPv4 or IPv6
 * address, or a CIDR block of either. The one rule the api checks before anything is applied and
 * every enforcing side relies on (a side that cannot reach some of these, such as IPv6, says so
 * with EGRESS_UNSUPPORTED).
 */
export function egressHostProblem(host: string): string | null {
  const slash = host.indexOf("/");
  if (slash >= 0) {
    const version = isIP(host.slice(0, slash));
    const prefix = host.slice(slash + 1);
    const valid = version !== 0 && /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
    return valid ? null : "a CIDR block: an IP address, a slash and a prefix length (10.1.0.0/16)";
  }
  if (isIP(host) !== 0) return null;
  // a name has a dot and does not end in digits: "10.0.0" is a mistyped address, not a host name
  const name =
    host.length <= 253 && host.includes(".") && !/\.\d+$/.test(host) && HOSTNAME.safeParse(host).success;
  return name ? null : "a DNS name (example.com), an IP address or a CIDR block (10.1.0.0/16)";
}
