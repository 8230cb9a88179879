/**
 * What a vendor's network rules do to its sandboxes, done to the emulator's machine containers:
 * iptables on the Docker host (emulators run as root beside the engine). Each machine with rules has
 * a chain of its own, jumped to from DOCKER-USER by its address, so rules never touch another
 * container and live beside a supervisor's CUBICLE-EGRESS chain (hooked by its bridge, not by
 * address). Traffic from the machine to the Docker host itself is not forwarded and so not filtered.
 */
import { isIPv4 } from "node:net";
import { localRunner } from "@cubicle/host/firewall-runner";
import { type Iptables, iptablesOf } from "@cubicle/host/iptables";
import { KeyedLock } from "@cubicle/host/keyed-lock";

/** One outbound rule of a machine; the first rule that matches a new connection decides. */
export interface OutboundRule {
  cidr: string;
  verdict: "accept" | "reject";
}

/** A machine's outbound rules; `otherwise` decides what no rule matched. */
export interface OutboundRules {
  rules: OutboundRule[];
  otherwise: "accept" | "reject";
}

export interface MachineFirewall {
  /** Replaces the machine's rules at once (one iptables-restore transaction); replies to connections it made always pass. */
  apply(machineAddress: string, rules: OutboundRules): Promise<void>;
  /** Removes the machine's rules (when it stops or is deleted). */
  release(machineAddress: string): Promise<void>;
}

/** Every machine chain's name starts so; the rest is its address in hex (chain names are short). */
export const MACHINE_CHAIN_PREFIX = "CUBICLE-EMU-";

export function machineChainOf(address: string): string {
  const hex = address
    .split(".")
    .map((octet) => Number(octet).toString(16).padStart(2, "0"))
    .join("");
  return `${MACHINE_CHAIN_PREFIX}${hex}`;
}

/** A refusal fails at once (a reset, or "administratively prohibited"), so programs do not hang. */
const refuse = (match: string[]) => [
  [...match, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
  [...match, "-j", "REJECT", "--reject-with", "icmp-admin-prohibited"],
];

/**
 * The chain's rules. Established traffic passes first: packets the machine sends in connections
 * made to it (from other containers), and connections a rule allowed before the rules changed, as a
 * vendor's firewall lets them live on.
 */
function chainRules(chain: string, { rules, otherwise }: OutboundRules): string[] {
  const body: string[][] = [["-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "RETURN"]];
  for (const rule of rules) {
    const match = ["-d", rule.cidr];
    if (rule.verdict === "accept") body.push([...match, "-j", "RETURN"]);
    else body.push(...refuse(match));
  }
  if (otherwise === "accept") body.push(["-j", "RETURN"]);
  else body.push(...refuse([]));
  return [`:${chain} - [0:0]`, ...body.map((rule) => ["-A", chain, ...rule].join(" "))];
}

function checkAddress(address: string): void {
  if (!isIPv4(address)) throw new Error(`a machine's address must be IPv4, not "${address}"`);
}

function checkCidr(cidr: string): void {
  const [address = "", prefix, ...rest] = cidr.split("/");
  const bits = Number(prefix);
  if (!isIPv4(address) || rest.length > 0 || !Number.isInteger(bits) || bits < 0 || bits > 32) {
    throw new Error(`an outbound rule needs an IPv4 CIDR such as 203.0.113.0/24, not "${cidr}"`);
  }
}

/** What the emulator needs to enforce a vendor's rules, for the error when it cannot. */
const FIREWALL_FIX = "run the emulator as root on the Docker host, whose iptables Docker uses";

async function changing(what: string, change: () => Promise<unknown>): Promise<void> {
  try {
    await change();
  } catch (error) {
    const said = error instanceof Error ? error.message : String(error);
    throw new Error(`the emulator could not ${what} on the host's firewall (${said}): ${FIREWALL_FIX}`, {
      cause: error,
    });
  }
}

class IptablesMachineFirewall implements MachineFirewall {
  private readonly locks = new KeyedLock();

  constructor(private readonly iptables: Iptables) {}

  async apply(machineAddress: string, rules: OutboundRules): Promise<void> {
    checkAddress(machineAddress);
    for (const rule of rules.rules) checkCidr(rule.cidr);
    await this.locks.run(machineAddress, async () => {
      const chain = machineChainOf(machineAddress);
      const jump = ["-s", `${machineAddress}/32`, "-j", chain];
      const lines = chainRules(chain, rules);
      // declaring the chain empties it; the jump is made once, in the same transaction
      if (!(await this.iptables.succeeds(["-C", "DOCKER-USER", ...jump]))) {
        lines.push(["-I", "DOCKER-USER", ...jump].join(" "));
      }
      await changing(`apply the rules of machine ${machineAddress}`, () => this.iptables.restore(lines));
    });
  }

  async release(machineAddress: string): Promise<void> {
    checkAddress(machineAddress);
    await this.locks.run(machineAddress, async () => {
      const chain = machineChainOf(machineAddress);
      if ((await this.iptables.chainRules(chain)) === null) return;
      const jump = ["-s", `${machineAddress}/32`, "-j", chain];
      const lines: string[] = [];
      if (await this.iptables.succeeds(["-C", "DOCKER-USER", ...jump])) {
        lines.push(["-D", "DOCKER-USER", ...jump].join(" "));
      }
      lines.push(`-F ${chain}`, `-X ${chain}`);
      await changing(`remove the rules of machine ${machineAddress}`, () => this.iptables.restore(lines));
    });
  }
}

/** The machines' firewall on this host, run with the supervisor's iptables helpers. One per emulator process. */
export function machineFirewall(): MachineFirewall {
  return new IptablesMachineFirewall(iptablesOf(localRunner));
}
