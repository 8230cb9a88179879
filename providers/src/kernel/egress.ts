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
