import type { Computer } from "@cubicle/db";
import { type EgressPolicy, ProviderError, type SandboxProvider } from "@cubicle/providers/contract";
import { egressUnsupported } from "@cubicle/providers/kernel";
import type { ComputerDeps } from "../computers/lifecycle.ts";
import { type Machine, machineOfRecord } from "../computers/repository.ts";
import { HttpProblem } from "../http/problem.ts";

/**
 * The provider that answers for a computer's policy: its machine's while it runs, otherwise the
 * one its next start will use.
 */
export async function providerOfComputer(deps: ComputerDeps, computer: Computer): Promise<SandboxProvider> {
  if (computer.state === "running") {
    const machine = await machineOfRecord(deps, computer);
    if (machine) return machine.provider;
  }
  return deps.sandbox.current();
}

/**
 * Why the provider cannot enforce the policy, as a sentence for an admin (the level, naming those
 * it enforces, or an allowlist beyond the vendor's rules), or null when it can.
 */
export function unenforcedReason(provider: SandboxProvider, policy: EgressPolicy): string | null {
  const why = egressUnsupported(provider.capabilities, policy);
  return why === null ? null : `The ${provider.kind} provider ${why}.`;
}

export const enforces = (provider: SandboxProvider, policy: EgressPolicy) =>
  unenforcedReason(provider, policy) === null;

/** An admin's choice the provider cannot enforce is refused, saying why. */
export function requireEnforceable(provider: SandboxProvider, policy: EgressPolicy): void {
  const why = unenforcedReason(provider, policy);
  if (why) throw new HttpProblem(422, "EGRESS_UNSUPPORTED", why);
}

/**
 * Applies the policy to the machine given, when its provider enforces the level; a level it cannot
 * enforce is left unapplied (the api shows the policy as not enforced). A failure is thrown: a
 * machine never passes for carrying a policy it did not take.
 */
export async function applyToMachine(machine: Machine, policy: EgressPolicy): Promise<void> {
  if (!enforces(machine.provider, policy)) return;
  await machine.provider.setEgress(machine.ref, policy);
}

/**
 * Applies the policy to the computer's machine now, running or stopped. Without a machine (none
 * yet, or gone) there is nothing to apply: the next start makes one and applies the policy then.
 */
export async function applyToComputer(
  deps: ComputerDeps,
  computer: Computer,
  policy: EgressPolicy,
): Promise<void> {
  const machine = await machineOfRecord(deps, computer);
  if (!machine) return;
  try {
    await applyToMachine(machine, policy);
  } catch (error) {
    if (error instanceof ProviderError && error.code === "MACHINE_MISSING") return;
    throw error;
  }
}
