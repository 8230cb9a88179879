import { lookup } from "node:dns/promises";
import { localRunner } from "@cubicle/host/firewall-runner";
import type { MachineFirewall } from "../machines/firewall.ts";
import { outboundRulesOf, type ResolveName } from "./network.ts";
import type { Sandbox } from "./sandbox.ts";

const resolveIpv4: ResolveName = (name) =>
  lookup(name, { family: 4, all: true }).then(
    (found) => found.map((entry) => entry.address),
    () => [],
  );

/**
 * Puts each running sandbox's network settings on its container as firewall rules, keyed by the
 * container's address (which a start may change), as Daytona's runner does; a stopped or removed
 * sandbox's rules go, so its old address carries nothing to the next container given it.
 */
export class NetworkEnforcer {
  /** The address each sandbox's rules are on. */
  private readonly applied = new Map<string, string>();

  constructor(
    private readonly firewall: MachineFirewall,
    private readonly resolve: ResolveName = resolveIpv4,
  ) {}

  /** Applies the sandbox's settings to its container now; it must be running. */
  async enforce(sandbox: Sandbox): Promise<void> {
    const address = sandbox.ip;
    if (!address) throw new Error(`sandbox ${sandbox.id} has no address to enforce its network settings on`);
    const previous = this.applied.get(sandbox.id);
    if (previous && previous !== address) await this.releaseAddress(previous);
    // the container's DNS servers are the host's (Docker's default bridge copies them)
    const rules = await outboundRulesOf(sandbox.network, this.resolve, await localRunner.nameservers());
    if (!rules) return this.releaseAddress(address);
    await this.firewall.apply(address, rules);
    this.applied.set(sandbox.id, address);
  }

  /** Removes the sandbox's rules (once its container stopped or went). */
  async forget(sandbox: Sandbox): Promise<void> {
    const address = this.applied.get(sandbox.id) ?? sandbox.ip;
    if (address) await this.releaseAddress(address);
  }

  /** Removes whatever rules are on an address. */
  async releaseAddress(address: string): Promise<void> {
    await this.firewall.release(address);
    for (const [id, at] of this.applied) if (at === address) this.applied.delete(id);
  }
}
