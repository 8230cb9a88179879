import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FirewallRunner } from "@cubicle/host/firewall-runner";
import type { ComputerRef } from "@cubicle/providers/supervisor-wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type NamespaceFirewall, startNamespaceFirewall } from "../testing/namespace-firewall.ts";
import { EgressEnforcer } from "./enforcer.ts";
import { chainOf, computerTag, EGRESS_CHAIN, jumpComment } from "./rules.ts";

// Several supervisors on one host share its firewall (each enforces its own computers' policies,
// and each sweeps what computers gone meanwhile left behind when it starts). These cases put two
// enforcers on one real iptables, in a namespace of the test's own, and make the other one act
// at the worst moment.

const BRIDGE = "cbr-test";
const SUBNET = "10.88.0.0/16";
const refOf = (name: string): ComputerRef => ({ homeKey: name, computerId: `c-${name}`, workspaceId: "w" });

let firewall: NamespaceFirewall;
let dataDirs: string[];
let enforcers: EgressEnforcer[];

beforeEach(async () => {
  firewall = await startNamespaceFirewall();
  dataDirs = [];
  enforcers = [];
});

afterEach(() => {
  for (const enforcer of enforcers) enforcer.close();
  firewall.close();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

/** A supervisor's enforcer on the namespace's firewall, prepared; `runner` may step in before its commands. */
async function enforcerOn(runner: FirewallRunner = firewall.runner): Promise<EgressEnforcer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "cubicle-enforcer-"));
  dataDirs.push(dataDir);
  const enforcer = new EgressEnforcer(dataDir, ["192.0.2.53"], runner);
  enforcers.push(enforcer);
  expect(await enforcer.prepare(BRIDGE, SUBNET)).toBe(true);
  return enforcer;
}

/** The namespace's runner, calling `before` ahead of each command (once it returns true, no more). */
function steppingIn(before: (program: string, args: string[], input?: string) => Promise<boolean>) {
  let done = false;
  return {
    ...firewall.runner,
    async run(program: string, args: string[], input?: string) {
      if (!done) done = await before(program, args, input);
      return firewall.runner.run(program, args, input);
    },
  } satisfies FirewallRunner;
}

/** `iptables -S` in the namespace, of one chain or of all. */
const rules = (chain?: string) => firewall.iptables.iptables(["-S", ...(chain ? [chain] : [])]);

describe("the egress enforcer beside another supervisor on one firewall", () => {
  it("stops a computer whose jump another supervisor's sweep removed between its read and its removal", async () => {
    const ref = refOf("stopping");
    // the other supervisor deletes the jump just before this one's own deletion runs
    const enforcer = await enforcerOn(
      steppingIn(async (program, args, input) => {
        if (program !== "iptables-restore" || !input?.includes(`-D ${EGRESS_CHAIN}`)) return false;
        await firewall.runner.run(program, args, input);
        return true;
      }),
    );
    await enforcer.attach(ref, "10.88.0.5");
    expect(await rules(EGRESS_CHAIN)).toContain(jumpComment(ref.homeKey));

    await enforcer.detach(ref.homeKey);
    const after = await rules();
    expect(after).not.toContain(jumpComment(ref.homeKey));
    expect(after).not.toContain(computerTag(ref.homeKey));
  });

  it("a sweep at start never empties the chains of a computer another supervisor attaches meanwhile", async () => {
    const running = await enforcerOn();
    const ref = refOf("attached-meanwhile");
    const chain = chainOf(computerTag(ref.homeKey), "A");
    let attachedRules = "";
    // the computer is attached just before the sweeping supervisor lists every chain
    const sweeping = await enforcerOn(
      steppingIn(async (program, args) => {
        if (program !== "iptables" || args.at(-1) !== "-S") return false;
        await running.attach(ref, "10.88.0.6");
        attachedRules = await rules(chain);
        return true;
      }),
    );
    await sweeping.sweep(async () => "10.88.0.6");
    expect(attachedRules).toContain(`-A ${chain} `);
    expect(await rules(chain)).toBe(attachedRules);
  });

  it("a sweep leaves whole a computer chain that something still jumps to, rather than empty", async () => {
    const kept = `${computerTag("referenced")}-B`;
    const unreached = `${computerTag("gone")}-B`;
    const { iptables } = firewall.iptables;
    for (const name of [kept, unreached, "SOMEONE-ELSE"]) await iptables(["-N", name]);
    await iptables(["-A", kept, "-j", "REJECT"]);
    await iptables(["-A", "SOMEONE-ELSE", "-j", kept]);
    const before = await rules(kept);

    const enforcer = await enforcerOn();
    await enforcer.sweep(async () => null);
    expect(await rules()).not.toContain(unreached);
    expect(await rules(kept)).toBe(before);
    expect(before).toContain("-j REJECT");
  });
});
