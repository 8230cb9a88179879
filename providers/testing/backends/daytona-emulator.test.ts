import { type EgressHosts, startEgressHosts } from "@cubicle/supervisor/testing/egress-hosts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressPolicy, MachineRef } from "../../src/contract/index.ts";
import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import {
  CASE_TIMEOUT_MS,
  collectRun,
  eventually,
  type ProviderUnderTest,
  testRef,
  uniqueHomeKey,
} from "../suites/types.ts";
import { daytona } from "./index.ts";

conformanceSuite("daytona-emulator", daytona, {
  "egress-refusals-observed": "Daytona reports no refused connections, so neither does its emulator",
});
faultSuite("daytona-emulator", daytona);
browserSandboxSuite("daytona-emulator", daytona);

/**
 * What Daytona's network settings do, seen from inside a sandbox: the emulator enforces them on
 * its container, so the provider's policy is proved against stand-in servers in a network
 * namespace (public-standing addresses: this project runs one file at a time).
 */
describe("daytona-emulator: egress enforced on the sandbox", () => {
  let put: ProviderUnderTest;
  let hosts: EgressHosts;
  let ref: MachineRef;

  beforeAll(async () => {
    hosts = await startEgressHosts(() => ({}));
    put = await daytona();
    const homeKey = uniqueHomeKey("egress");
    const provisioned = await put.provider.provision(testRef(homeKey, null));
    ref = testRef(homeKey, provisioned.providerRef);
  }, 180_000);

  afterAll(async () => {
    if (ref) await put.provider.destroy(ref).catch(() => undefined);
    await put?.cleanup();
    await hosts?.close();
  }, 120_000);

  /** What the sandbox reads from the stand-in at `address`, or "" when it cannot connect. */
  async function reach(address: string): Promise<string> {
    const tried = await collectRun(put.provider, ref, {
      command: `timeout 5 bash -c 'exec 3<>/dev/tcp/${address}/${hosts.port} && head -c 100 <&3' 2>/dev/null || true`,
      timeoutMs: 20_000,
    });
    return tried.stdout.trim();
  }

  const greeting = (address: string) => `hello ${address}`;
  /** A live change holds within 5 s of the call returning (the emulator applies it before answering). */
  const holdsSoon = (address: string, expected: string) =>
    eventually(async () => (await reach(address)) === expected, 5_000, 250);

  it(
    "offline refuses a public server; an allowlist lets through only what it lists; each change holds at once",
    async () => {
      const [listed, other] = hosts.publicAddresses;
      expect(await reach(listed)).toBe(greeting(listed));

      await put.provider.setEgress(ref, { level: "offline", allow: [] });
      expect(await holdsSoon(listed, "")).toBe(true);
      expect(await reach(other)).toBe("");

      const allowlist: EgressPolicy = { level: "allowlist", allow: [{ host: listed, ports: [] }] };
      await put.provider.setEgress(ref, allowlist);
      expect(await put.appliedEgress?.(ref)).toEqual(allowlist);
      expect(await holdsSoon(listed, greeting(listed))).toBe(true);
      expect(await reach(other)).toBe("");

      await put.provider.setEgress(ref, { level: "open", allow: [] });
      expect(await holdsSoon(other, greeting(other))).toBe(true);
    },
    CASE_TIMEOUT_MS,
  );

  it(
    "a stopped sandbox keeps its policy, which holds again from the first moment after a start",
    async () => {
      const [listed, other] = hosts.publicAddresses;
      const allowlist: EgressPolicy = { level: "allowlist", allow: [{ host: `${other}/32`, ports: [] }] };
      await put.provider.setEgress(ref, { level: "offline", allow: [] });
      await put.provider.stop(ref);
      await put.provider.setEgress(ref, allowlist);
      await put.provider.provision(ref);
      expect(await reach(listed)).toBe("");
      expect(await reach(other)).toBe(greeting(other));
    },
    CASE_TIMEOUT_MS * 2,
  );
});
