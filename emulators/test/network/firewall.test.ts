/**
 * The machines' firewall on real containers (the E2B desktop image, kept idle), against a stand-in
 * server in a network namespace this test makes: what a machine reaches is asserted from inside it,
 * with bash's /dev/tcp. Only the private stand-in is used, so the file may run beside other egress
 * tests (the public stand-ins' addresses are fixed).
 */
import { execFile, execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { type EgressHosts, startEgressHosts } from "@cubicle/host/testing/egress-hosts";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2B_DESKTOP_IMAGE } from "../../src/e2b/index.ts";
import { type MachineFirewall, machineChainOf, machineFirewall } from "../../src/machines/firewall.ts";

const docker = new Docker();
const run = promisify(execFile);
let hosts: EgressHosts;
let firewall: MachineFirewall;
const containers: Docker.Container[] = [];
const addresses: string[] = [];

async function idleMachine(): Promise<string> {
  const container = await docker.createContainer({
    name: `cubicle-firewall-test-${randomUUID().slice(0, 8)}`,
    Image: E2B_DESKTOP_IMAGE,
    Entrypoint: ["sleep", "infinity"],
    HostConfig: { NetworkMode: "bridge" },
  });
  containers.push(container);
  await container.start();
  return (await container.inspect()).NetworkSettings.Networks.bridge?.IPAddress as string;
}

/** What machine `index` reads from the stand-in within 10 s, or "" when it cannot connect. */
async function reach(index: number): Promise<string> {
  const container = containers[index] as Docker.Container;
  const { stdout } = await run("docker", [
    "exec",
    container.id,
    "bash",
    "-c",
    `timeout 10 bash -c 'exec 3<>/dev/tcp/${hosts.privateAddress}/${hosts.port} && head -c 200 <&3' 2>/dev/null || true`,
  ]);
  return stdout.trim();
}

const hostRules = () => execFileSync("iptables", ["-w", "10", "-S"], { encoding: "utf8" });
const greeting = () => `hello ${hosts.privateAddress}`;

beforeAll(async () => {
  hosts = await startEgressHosts(() => ({}), { privateOnly: true });
  firewall = machineFirewall();
  addresses.push(await idleMachine(), await idleMachine());
}, 120_000);

afterAll(async () => {
  for (const address of addresses) await firewall?.release(address).catch(() => undefined);
  await Promise.all(containers.map((container) => container.remove({ force: true }).catch(() => undefined)));
  await hosts?.close();
}, 60_000);

describe("the emulators' machine firewall", () => {
  it("refuses, then allows, a destination from inside the machine, and leaves other containers alone", async () => {
    const [machine, other] = addresses as [string, string];
    expect(await reach(0)).toBe(greeting());

    await firewall.apply(machine, {
      rules: [{ cidr: `${hosts.privateAddress}/32`, verdict: "reject" }],
      otherwise: "accept",
    });
    expect(await reach(0)).toBe("");
    expect(await reach(1)).toBe(greeting());

    await firewall.apply(machine, {
      rules: [{ cidr: `${hosts.privateAddress}/32`, verdict: "accept" }],
      otherwise: "reject",
    });
    expect(await reach(0)).toBe(greeting());

    await firewall.apply(machine, { rules: [], otherwise: "reject" });
    expect(await reach(0)).toBe("");
    // replacing rules keeps one jump to the machine's chain
    const jumps = hostRules()
      .split("\n")
      .filter((line) => line.startsWith("-A DOCKER-USER") && line.includes(machineChainOf(machine)));
    expect(jumps).toEqual([`-A DOCKER-USER -s ${machine}/32 -j ${machineChainOf(machine)}`]);
    expect(hostRules()).not.toContain(machineChainOf(other));
  });

  it("release removes the machine's chain and its jump, and the machine reaches out again", async () => {
    const [machine] = addresses as [string];
    await firewall.apply(machine, { rules: [], otherwise: "reject" });
    await firewall.release(machine);
    expect(hostRules()).not.toContain(machineChainOf(machine));
    expect(await reach(0)).toBe(greeting());
    // releasing a machine without rules is not an error
    await firewall.release(machine);
  });

  it("refuses rules it cannot enforce before touching the host", async () => {
    const [machine] = addresses as [string];
    await expect(
      firewall.apply(machine, { rules: [{ cidr: "example.com", verdict: "accept" }], otherwise: "reject" }),
    ).rejects.toThrow(/IPv4 CIDR/);
    await expect(firewall.apply("fd00::1", { rules: [], otherwise: "reject" })).rejects.toThrow(/IPv4/);
    expect(hostRules()).not.toContain(machineChainOf(machine));
  });
});
