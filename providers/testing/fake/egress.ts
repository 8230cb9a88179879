import {
  EGRESS_LEVELS,
  type EgressAllowlistLimits,
  type EgressLevel,
  type EgressPolicy,
  type EgressRefusal,
  type EgressReport,
  type SandboxProvider,
} from "../../src/contract/index.ts";
import { FULL_EGRESS_ALLOWLIST } from "../../src/kernel/egress.ts";

/** The refusals a fake machine keeps, as the Docker supervisor keeps a bounded number. */
const KEPT_REFUSALS = 256;

interface MachineEgress {
  policy: EgressPolicy;
  refusedTotal: number;
  /** Each with its sequence number, which is the cursor after it. */
  refusals: { seq: number; refusal: EgressRefusal }[];
}

/**
 * The fake's egress side: it enforces nothing (it opens no connections), but records the policy
 * each machine holds and reports the refusals a test injects, so api tests can drive the policy
 * routes and the refusal audit path end to end.
 */
export class FakeEgress {
  /** What `capabilities.egress` answers; a test narrows it to play a backend that enforces less. */
  levels: readonly EgressLevel[] = EGRESS_LEVELS;
  /** What `capabilities.egressAllowlist` answers; a test narrows it to play a vendor's limits. */
  allowlist: EgressAllowlistLimits = FULL_EGRESS_ALLOWLIST;
  private readonly machines = new Map<string, MachineEgress>();

  /** The policy the machine holds (null before any was applied): what a test asserts was applied. */
  policyOf(providerRef: string): EgressPolicy | null {
    return this.machines.get(providerRef)?.policy ?? null;
  }

  /** A connection the machine's policy refused, as the enforcing side would observe it. */
  refuse(providerRef: string, refusal: Omit<EgressRefusal, "at"> & { at?: string }): void {
    const machine = this.machines.get(providerRef);
    if (!machine) throw new Error(`fake machine ${providerRef} holds no egress policy to refuse with`);
    machine.refusedTotal++;
    machine.refusals.push({
      seq: machine.refusedTotal,
      refusal: { at: refusal.at ?? new Date().toISOString(), ...refusal },
    });
    machine.refusals.splice(0, Math.max(0, machine.refusals.length - KEPT_REFUSALS));
  }

  apply(providerRef: string, policy: EgressPolicy): void {
    const machine = this.machines.get(providerRef);
    const copy = { level: policy.level, allow: policy.allow.map((d) => ({ ...d, ports: [...d.ports] })) };
    if (machine) machine.policy = copy;
    else this.machines.set(providerRef, { policy: copy, refusedTotal: 0, refusals: [] });
  }

  report(providerRef: string, after: string | null): EgressReport {
    const machine = this.machines.get(providerRef);
    if (!machine) return { refusedTotal: 0, refusals: [], cursor: after ?? "0" };
    const from = Number(after ?? 0) || 0;
    return {
      refusedTotal: machine.refusedTotal,
      refusals: machine.refusals.filter((r) => r.seq > from).map((r) => r.refusal),
      cursor: String(machine.refusedTotal),
    };
  }

  forget(providerRef: string): void {
    this.machines.delete(providerRef);
  }
}

const egressOf = new WeakMap<SandboxProvider, FakeEgress>();

export function registerFakeEgress(provider: SandboxProvider, egress: FakeEgress): void {
  egressOf.set(provider, egress);
}

/** The egress side of a fake provider (the one the api's Sandbox built, say), for a test to drive. */
export function fakeEgress(provider: SandboxProvider): FakeEgress {
  const egress = egressOf.get(provider);
  if (!egress) throw new Error(`the ${provider.kind} provider is not a fake one`);
  return egress;
}
