import { isIP } from "node:net";
import { z } from "zod";
import {
  EGRESS_LEVELS,
  type EgressAllowlistLimits,
  type EgressLevel,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
  type MachineRef,
  type ProviderCapabilities,
  ProviderError,
  type SandboxProvider,
} from "../contract/index.ts";

/** Every level: what a backend whose enforcing side takes the whole policy lists in its capabilities. */
export const ALL_EGRESS_LEVELS: readonly EgressLevel[] = EGRESS_LEVELS;

/** An allowlist as the api takes it: as many destinations as it allows, each narrowed to ports or not. */
export const FULL_EGRESS_ALLOWLIST: EgressAllowlistLimits = {
  ports: true,
  maxDestinations: MAX_EGRESS_DESTINATIONS,
};

/**
 * Backends that enforce nothing of their own (the host's desktop; vendors not yet mapped): the
 * machine reaches whatever its host or vendor lets it, which is `open` and nothing stricter.
 */
export const OPEN_EGRESS_ONLY: readonly EgressLevel[] = ["open"];

/**
 * Why the backend cannot enforce the policy as written, or null when it can: the one rule every
 * backend applies before anything is applied, and the api before it stores a policy.
 */
export function egressUnsupported(capabilities: ProviderCapabilities, policy: EgressPolicy): string | null {
  const levels = capabilities.egress;
  if (!levels.includes(policy.level))
    return (
      `cannot enforce the ${policy.level} egress level; ` +
      (levels.length > 0 ? `it enforces ${levels.join(", ")}` : "it enforces none")
    );
  const limits = capabilities.egressAllowlist;
  if (policy.level !== "allowlist" || !limits) return null;
  if (policy.allow.length > limits.maxDestinations)
    return `enforces at most ${limits.maxDestinations} allowlist destinations; this policy lists ${policy.allow.length}`;
  const ported = policy.allow.find((destination) => destination.ports.length > 0);
  if (ported && !limits.ports)
    return `cannot narrow an allowlist destination to ports: list ${ported.host} without ports (each destination then allows every port)`;
  return null;
}

/** Refuses, before anything is applied, a policy the backend cannot enforce (egressUnsupported). */
export function requireEnforceable(capabilities: ProviderCapabilities, policy: EgressPolicy): void {
  const why = egressUnsupported(capabilities, policy);
  if (why) throw new ProviderError("EGRESS_UNSUPPORTED", `this provider ${why}`);
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
