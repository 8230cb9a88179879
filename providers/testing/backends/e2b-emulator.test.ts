import { type EgressHosts, startEgressHosts } from "@cubicle/supervisor/testing/egress-hosts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressPolicy, MachineRef } from "../../src/contract/index.ts";
import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { collectRun, type ProviderUnderTest, testRef, uniqueHomeKey } from "../suites/types.ts";
import { e2b } from "./index.ts";

conformanceSuite("e2b-emulator", e2b, {
  "egress-refusals-observed": "E2B enforces its network rules but reports no refused connection",
});
faultSuite("e2b-emulator", e2b);
browserSandboxSuite("e2b-emulator", e2b);

/**
 * The policy really holds inside the machine: the provider sets it through the SDK, the emulator
 * enforces E2B's settings on the container, and the machine tries stand-in public servers (in a
 * network namespace this test makes) with bash's /dev/tcp.
 */
describe("e2b-emulator: egress enforced inside the machine", () => {
  let put: ProviderUnderTest;
  let hosts: EgressHosts;
  let ref: MachineRef;

  /** What the machine reads from `address` within 5 s, or "" when it cannot connect. */
  async function reach(address: string): Promise<string> {
    const run = await collectRun(put.provider, ref, {
      command: `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${hosts.port} && head -c 200 <&3' 2>/dev/null || true`,
      timeoutMs: 30_000,
    });
    return run.stdout.trim();
  }

  /** Polls until the machine's reach of `address` is `expected`, or 5 s went by. */
  async function within5s(address: string, expected: string): Promise<void> {
    const deadline = Date.now() + 5_000;
    let seen = await reach(address);
    while (seen !== expected && Date.now() < deadline) seen = await reach(address);
    expect(seen, `what the machine read from ${address}`).toBe(expected);
  }

  const allowlist = (host: string): EgressPolicy => ({ level: "allowlist", allow: [{ host, ports: [] }] });

  beforeAll(async () => {
    hosts = await startEgressHosts(() => ({}));
    put = await e2b();
    const homeKey = uniqueHomeKey("egress");
    const provisioned = await put.provider.provision(testRef(homeKey, null));
    ref = testRef(homeKey, provisioned.providerRef);
  }, 240_000);

  afterAll(async () => {
    await put?.cleanup();
    await hosts?.close();
  }, 120_000);

  it("offline refuses a public server; an allowlist reaches it and refuses another; switching live takes effect within 5 s", {
    timeout: 120_000,
  }, async () => {
    const [listed, other] = hosts.publicAddresses;
    const hello = (address: string) => `hello ${address}`;
    // E2B's default: the public servers are reachable, the private one and the metadata service are not
    await put.provider.setEgress(ref, { level: "default", allow: [] });
    await within5s(listed, hello(listed));
    expect(await reach(hosts.privateAddress)).toBe("");
    expect(await reach(hosts.metadataAddress)).toBe("");

    await put.provider.setEgress(ref, { level: "offline", allow: [] });
    await within5s(listed, "");

    await put.provider.setEgress(ref, allowlist(listed));
    await within5s(listed, hello(listed));
    expect(await reach(other)).toBe("");

    await put.provider.setEgress(ref, allowlist(other));
    await within5s(other, hello(other));
    expect(await reach(listed)).toBe("");
  });

  it("a policy set while the machine is stopped holds from its resume", { timeout: 120_000 }, async () => {
    const [listed] = hosts.publicAddresses;
    await put.provider.setEgress(ref, { level: "open", allow: [] });
    await put.provider.stop(ref);
    await put.provider.setEgress(ref, { level: "offline", allow: [] });
    await put.provider.provision(ref);
    expect(await reach(listed)).toBe("");
  });
});
