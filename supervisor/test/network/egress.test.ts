/**
 * Egress policies on real Docker computers (the real image), against stand-in hosts in a network
 * namespace this test makes: a private server, a "metadata service" on 169.254.169.254, two
 * public-standing servers, a DNS server on a private address (SUPERVISOR_DNS), and another computer.
 * Everything is asserted from inside a computer, with bash's /dev/tcp and getent.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { type EgressHosts, startEgressHosts } from "@cubicle/host/testing/egress-hosts";
import type { EgressPolicy } from "@cubicle/providers/contract";
import {
  type ComputerRef,
  createSupervisorClient,
  type SupervisorClient,
  SupervisorError,
} from "@cubicle/providers/supervisor-wire";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computerTag, EGRESS_CHAIN } from "../../src/egress/rules.ts";
import { startTestSupervisor, type TestSupervisor } from "../../src/testing/supervisor.ts";

const LONG = { timeout: 300_000 };
const suffix = randomBytes(4).toString("hex");
const PUBLIC_NAME = `public-one.egress-${suffix}.test`;
const computer: ComputerRef = {
  homeKey: `egress-${suffix}`,
  computerId: `c-${suffix}`,
  workspaceId: `w-${suffix}`,
};
const other: ComputerRef = {
  homeKey: `egress-${suffix}-b`,
  computerId: `c-${suffix}-b`,
  workspaceId: `w-${suffix}`,
};

let hosts: EgressHosts;
let supervisor: TestSupervisor;
let client: SupervisorClient;
const docker = new Docker();

/** What the computer reads from address:port within 10 s (the servers greet; a loaded host can be slow), or "" when it cannot connect. */
async function reach(ref: ComputerRef, address: string, port: number): Promise<string> {
  let out = "";
  for await (const event of client.exec(ref, {
    command: `timeout 10 bash -c 'exec 3<>/dev/tcp/${address}/${port} && head -c 200 <&3' 2>/dev/null || true`,
    timeoutMs: 30_000,
  })) {
    if (event.type === "stdout") out += event.data;
  }
  return out.trim();
}

/** The IPv4 address the computer's resolver gives for a name, or "" when it answers none. */
async function resolve(ref: ComputerRef, name: string): Promise<string> {
  let out = "";
  for await (const event of client.exec(ref, {
    command: `timeout 10 getent ahostsv4 ${name} | head -n1 | cut -d' ' -f1`,
    timeoutMs: 30_000,
  })) {
    if (event.type === "stdout") out += event.data;
  }
  return out.trim();
}

/** Polls `check` until it passes or 5 s went by (a policy change applies within that). */
const within5s = (check: () => Promise<void>) => eventually(check, 5_000);

async function eventually(check: () => Promise<void>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Whether this host (not a computer) connects to address:port: the stand-ins really listen. */
function hostReaches(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, timeout: 3_000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const startedAt = async (ref: ComputerRef) =>
  (await docker.getContainer(`cubicle-${ref.homeKey}`).inspect()).State.StartedAt;
const addressOf = async (ref: ComputerRef) =>
  (await docker.getContainer(`cubicle-${ref.homeKey}`).inspect()).NetworkSettings.Networks[
    "cubicle-computers"
  ]?.IPAddress as string;
const egressRules = () => execFileSync("iptables", ["-w", "10", "-S"], { encoding: "utf8" });

beforeAll(async () => {
  hosts = await startEgressHosts(({ publicAddresses }) => ({ [PUBLIC_NAME]: publicAddresses[0] }));
  supervisor = await startTestSupervisor({ env: { SUPERVISOR_DNS: hosts.dnsAddress } });
  client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
  await Promise.all([client.create(computer), client.create(other)]);
}, 400_000);

afterAll(async () => {
  for (const ref of [computer, other]) {
    await client
      ?.destroy(ref)
      .catch(() => docker.getContainer(`cubicle-${ref.homeKey}`).remove({ force: true }));
  }
  await supervisor?.close();
  await hosts?.close();
}, 120_000);

describe("egress policies on Docker computers", () => {
  it("default: the public internet and DNS; not private, link-local or other computers", LONG, async () => {
    expect((await client.health()).egress).toBe("on");
    expect((await client.egress(computer, null)).policy).toEqual({ level: "default", allow: [] });
    const otherAddress = await addressOf(other);
    // the stand-ins and the other computer's screen port do answer this host
    expect(await hostReaches(hosts.privateAddress, hosts.port)).toBe(true);
    expect(await hostReaches(otherAddress, 6080)).toBe(true);

    expect(await reach(computer, hosts.publicAddresses[0], hosts.port)).toBe(
      `hello ${hosts.publicAddresses[0]}`,
    );
    expect(await resolve(computer, PUBLIC_NAME)).toBe(hosts.publicAddresses[0]);
    expect(await reach(computer, hosts.privateAddress, hosts.port)).toBe("");
    expect(await reach(computer, hosts.metadataAddress, hosts.port)).toBe("");
    expect(await reach(computer, otherAddress, 6080)).toBe("");
  });

  it("a refused connection is counted and recorded with its destination", LONG, async () => {
    const before = await client.egress(computer, null);
    expect(await reach(computer, hosts.privateAddress, hosts.port)).toBe("");
    await within5s(async () => {
      const { report } = await client.egress(computer, before.report.cursor);
      expect(report.refusedTotal).toBeGreaterThan(before.report.refusedTotal);
      expect(report.refusals).toContainEqual(
        expect.objectContaining({ address: hosts.privateAddress, port: hosts.port, protocol: "tcp" }),
      );
      expect(report.cursor).not.toBe(before.report.cursor);
    });
  });

  it(
    "allowlist, offline and open apply to the running computer within 5 s, without a restart",
    LONG,
    async () => {
      const started = await startedAt(computer);
      const [first, second] = hosts.publicAddresses;

      await client.setEgress(computer, {
        level: "allowlist",
        allow: [{ host: PUBLIC_NAME, ports: [hosts.port] }],
      });
      await within5s(async () => {
        expect(await reach(computer, first, hosts.port)).toBe(`hello ${first}`);
        expect(await reach(computer, second, hosts.port)).toBe("");
        expect(await resolve(computer, PUBLIC_NAME)).toBe(first);
      });

      await client.setEgress(computer, {
        level: "allowlist",
        allow: [{ host: "198.51.100.0/24", ports: [hosts.port] }],
      });
      await within5s(async () => {
        expect(await reach(computer, second, hosts.port)).toBe(`hello ${second}`);
        expect(await reach(computer, first, hosts.port)).toBe("");
      });

      await client.setEgress(computer, { level: "offline", allow: [] });
      await within5s(async () => {
        expect(await reach(computer, second, hosts.port)).toBe("");
        expect(await resolve(computer, PUBLIC_NAME)).toBe("");
      });

      await client.setEgress(computer, { level: "open", allow: [] });
      await within5s(async () => {
        expect(await reach(computer, hosts.privateAddress, hosts.port)).toBe(`hello ${hosts.privateAddress}`);
        expect(await resolve(computer, PUBLIC_NAME)).toBe(first);
        expect(await reach(computer, await addressOf(other), 6080)).toBe("");
      });
      expect(await startedAt(computer)).toBe(started);
    },
  );

  it("an allowlisted name follows its DNS records as they expire", LONG, async () => {
    const [first, second] = hosts.publicAddresses;
    const name = `moving.egress-${suffix}.test`;
    hosts.setRecord(name, first);
    await client.setEgress(computer, { level: "allowlist", allow: [{ host: name, ports: [hosts.port] }] });
    expect(await reach(computer, first, hosts.port)).toBe(`hello ${first}`);
    expect(await reach(computer, second, hosts.port)).toBe("");
    hosts.setRecord(name, second);
    // the supervisor asks again when the records expire, but not sooner than every 30 s
    await eventually(async () => {
      expect(await reach(computer, second, hosts.port)).toBe(`hello ${second}`);
    }, 90_000);
    expect(await reach(computer, first, hosts.port)).toBe("");
  });

  it(
    "keeps the policy across a restart of the computer and of the supervisor; drops jumps and chains of computers gone meanwhile",
    LONG,
    async () => {
      const offline: EgressPolicy = { level: "offline", allow: [] };
      await client.setEgress(computer, offline);
      await client.stop(computer);
      await client.create(computer);
      expect(await reach(computer, hosts.publicAddresses[0], hosts.port)).toBe("");

      await supervisor.stop();
      // stopped behind the supervisor's back: its address is free for another container
      expect(egressRules()).toContain(`cubicle-egress:${other.homeKey}`);
      await docker.getContainer(`cubicle-${other.homeKey}`).kill();
      // and chains no jump reaches (a computer removed behind every supervisor's back)
      const unreached = `CE-${randomBytes(8).toString("hex")}`;
      for (const chain of [`${unreached}-B`, `${unreached}-BR`]) {
        execFileSync("iptables", ["-w", "10", "-N", chain]);
      }
      execFileSync("iptables", ["-w", "10", "-A", `${unreached}-B`, "-j", `${unreached}-BR`]);
      supervisor = await startTestSupervisor({
        env: { SUPERVISOR_DNS: hosts.dnsAddress },
        restartOf: supervisor,
      });
      client = createSupervisorClient({ baseUrl: supervisor.url, token: supervisor.token });
      // the restarted supervisor swept the killed computer's jump at start
      expect(egressRules()).not.toContain(`cubicle-egress:${other.homeKey}`);
      expect(egressRules()).not.toContain(unreached);
      expect(egressRules()).toContain(computerTag(computer.homeKey));
      expect((await client.egress(computer, null)).policy).toEqual(offline);
      expect(await reach(computer, hosts.publicAddresses[0], hosts.port)).toBe("");
      await client.setEgress(computer, { level: "default", allow: [] });
      expect(await reach(computer, hosts.publicAddresses[0], hosts.port)).toBe(
        `hello ${hosts.publicAddresses[0]}`,
      );
    },
  );

  it("refuses a bad policy with problem JSON that lists what is wrong", async () => {
    const error = await client
      .setEgress(computer, {
        level: "default",
        allow: [{ host: "10.0.0.0/40", ports: [0] }],
      } as EgressPolicy)
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(SupervisorError);
    const problem = (error as SupervisorError).problem;
    expect(problem).toMatchObject({ status: 400, code: "INVALID_REQUEST" });
    expect(problem?.errors?.map((entry) => entry.path)).toEqual(
      expect.arrayContaining(["allow.0.host", "allow.0.ports.0", "allow"]),
    );
  });

  it("refuses a well-formed IPv6 destination as one Docker computers cannot carry (422 EGRESS_UNSUPPORTED)", async () => {
    const refused = await client
      .setEgress(computer, { level: "allowlist", allow: [{ host: "2001:db8::/32", ports: [] }] })
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect((refused as SupervisorError).problem).toMatchObject({ status: 422, code: "EGRESS_UNSUPPORTED" });
  });

  it("destroy removes the computer's rules and its stored policy", LONG, async () => {
    const tag = computerTag(other.homeKey);
    await client.create(other);
    expect(egressRules()).toContain(`cubicle-egress:${other.homeKey}`);
    expect(await client.destroy(other)).toBe(true);
    const rules = egressRules();
    expect(rules).not.toContain(`cubicle-egress:${other.homeKey}`);
    expect(rules).not.toContain(tag);
    expect(rules).toContain(`-N ${EGRESS_CHAIN}`);
    expect(existsSync(join(supervisor.dataDir, "egress", `${other.homeKey}.json`))).toBe(false);
  });
});
