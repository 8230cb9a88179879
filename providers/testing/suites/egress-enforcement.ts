import { type EgressHosts, startEgressHosts } from "@cubicle/host/testing/egress-hosts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressLevel, EgressPolicy, MachineRef, SandboxProvider } from "../../src/contract/index.ts";
import { CASE_TIMEOUT_MS, collectRun, Machines, type MakeProvider, type ProviderUnderTest } from "./types.ts";

/** A switch of policy holds inside the machine within this long of `setEgress` returning. */
const SWITCH_HOLDS_WITHIN_MS = 5_000;

const only = (level: EgressLevel): EgressPolicy => ({ level, allow: [] });
const allowlistOf = (host: string): EgressPolicy => ({ level: "allowlist", allow: [{ host, ports: [] }] });

/**
 * A policy really holds inside the machine, for the backends whose enforcing side is real (Docker's
 * supervisor, the vendor emulators' firewalls): stand-in servers in a network namespace this suite
 * makes (a private one, a metadata service, two public-standing ones), tried from inside the
 * machine with bash's /dev/tcp. The public and metadata addresses are fixed, so the providers
 * project runs its files one at a time. Each backend takes the cases for the levels it enforces.
 */
export function egressEnforcementSuite(name: string, make: MakeProvider): void {
  describe(`${name} egress enforced inside the machine`, () => {
    let put: ProviderUnderTest | undefined;
    let hosts: EgressHosts;
    const provider = (): SandboxProvider => {
      if (!put) throw new Error(`${name}: the provider was not made`);
      return put.provider;
    };
    const machines = new Machines(provider);
    const enforces = (level: EgressLevel) => provider().capabilities.egress.includes(level);

    beforeAll(async () => {
      hosts = await startEgressHosts(() => ({}));
      put = await make();
    }, CASE_TIMEOUT_MS * 2);
    afterAll(async () => {
      await machines.destroyAll({ shared: true });
      await put?.cleanup();
      await hosts?.close();
    }, CASE_TIMEOUT_MS * 2);

    /** What the machine reads from the stand-in at `address`, or "" when it cannot connect. */
    async function reach(ref: MachineRef, address: string): Promise<string> {
      const run = await collectRun(provider(), ref, {
        command: `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${hosts.port} && head -c 200 <&3' 2>/dev/null || true`,
        timeoutMs: 30_000,
      });
      return run.stdout.trim();
    }
    const hello = (address: string) => `hello ${address}`;

    /** Applies the policy, then expects `address` to read `expected` within SWITCH_HOLDS_WITHIN_MS. */
    async function switchTo(ref: MachineRef, policy: EgressPolicy, address: string, expected: string) {
      await provider().setEgress(ref, policy);
      const deadline = Date.now() + SWITCH_HOLDS_WITHIN_MS;
      let seen = await reach(ref, address);
      while (seen !== expected && Date.now() < deadline) seen = await reach(ref, address);
      expect(seen, `${policy.level}: what the machine read from ${address}`).toBe(expected);
    }

    it(
      "each level it enforces holds on a running machine, switched live within 5 s",
      async () => {
        const ref = await machines.shared();
        const [listed, other] = hosts.publicAddresses;
        if (enforces("default")) {
          await switchTo(ref, only("default"), listed, hello(listed));
          expect(await reach(ref, hosts.privateAddress), "a private address").toBe("");
          expect(await reach(ref, hosts.metadataAddress), "the metadata service").toBe("");
        }
        await switchTo(ref, only("offline"), listed, "");
        expect(await reach(ref, other)).toBe("");

        await switchTo(ref, allowlistOf(listed), listed, hello(listed));
        expect(await reach(ref, other)).toBe("");
        await switchTo(ref, allowlistOf(`${other}/32`), other, hello(other));
        expect(await reach(ref, listed)).toBe("");

        await switchTo(ref, only("open"), listed, hello(listed));
        expect(await reach(ref, other)).toBe(hello(other));
      },
      CASE_TIMEOUT_MS * 2,
    );

    it(
      "a policy set while the machine is stopped holds from its next start",
      async () => {
        // the suite's last case, so stopping the shared machine disturbs no other
        const ref = await machines.shared();
        const [listed, other] = hosts.publicAddresses;
        await provider().setEgress(ref, only("offline"));
        await provider().stop(ref);
        await provider().setEgress(ref, allowlistOf(other));
        await provider().provision(ref);
        expect(await reach(ref, listed)).toBe("");
        expect(await reach(ref, other)).toBe(hello(other));
      },
      CASE_TIMEOUT_MS * 2,
    );
  });
}
