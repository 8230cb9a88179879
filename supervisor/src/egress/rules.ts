import { createHash } from "node:crypto";
import type { EgressLevel } from "@cubicle/providers/contract";
import { REFUSED_BY_DEFAULT } from "./policy.ts";

/** Cubicle's own chain, jumped to from DOCKER-USER for everything entering from the computers' bridge. */
export const EGRESS_CHAIN = "CUBICLE-EGRESS";

/** A computer's chains and log prefix are named by a hash: home keys are longer than iptables allows. */
export const computerTag = (homeKey: string) =>
  `CE-${createHash("sha256").update(homeKey).digest("hex").slice(0, 16)}`;

/** What computerTag makes, as a regular-expression source, for reading tags back from iptables. */
export const COMPUTER_TAG_PATTERN = "CE-[0-9a-f]{16}";

/** The comment on a computer's jump in EGRESS_CHAIN, by which its jump is found again. */
export const jumpComment = (homeKey: string) => `cubicle-egress:${homeKey}`;

/** Rules are swapped between two generations of chains, so the new set exists before the jump moves. */
export type Generation = "A" | "B";
export const chainOf = (tag: string, generation: Generation) => `${tag}-${generation}`;
export const refuseChainOf = (tag: string, generation: Generation) => `${tag}-${generation}R`;

/** Refusals logged per computer at most this often (the counters count all of them). */
const LOG_LIMIT = ["-m", "limit", "--limit", "10/second", "--limit-burst", "20"];

/**
 * EGRESS_CHAIN itself: replies pass first (screens, and connections a policy allowed before it
 * changed), then one goto per computer by its address (added by the enforcer), and whatever
 * comes from an address without a policy yet is refused, so a computer's first moments leak nothing.
 */
export function baseRules(): string[][] {
  return [
    ["-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "RETURN"],
    ["-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
    ["-j", "REJECT", "--reject-with", "icmp-admin-prohibited"],
  ];
}

/** An allowed IPv4 block with its ports (empty: every port). */
export interface Allowed {
  cidr: string;
  ports: number[];
}

export interface ComputerRules {
  level: EgressLevel;
  /** Where the computers' DNS goes (SUPERVISOR_DNS); reachable on port 53 unless offline. */
  resolvers: readonly string[];
  /** The computers' subnet: the other computers, refused at every level. */
  subnet: string;
  /** For `allowlist`: the listed blocks, names already resolved. */
  allowed: readonly Allowed[];
}

/** multiport takes at most 15 ports per rule. */
function portGroups(ports: readonly number[]): string[][] {
  if (ports.length === 0) return [[]];
  const groups: string[][] = [];
  for (let i = 0; i < ports.length; i += 15) {
    groups.push(["-m", "multiport", "--dports", ports.slice(i, i + 15).join(",")]);
  }
  return groups;
}

function allow(cidr: string, ports: readonly number[]): string[][] {
  if (ports.length === 0) return [["-d", cidr, "-j", "RETURN"]];
  return ["tcp", "udp"].flatMap((protocol) =>
    portGroups(ports).map((group) => ["-d", cidr, "-p", protocol, ...group, "-j", "RETURN"]),
  );
}

/**
 * One computer's chain (EGRESS_CHAIN goes to it with -g, so allowed traffic RETURNs straight to
 * DOCKER-USER and on to Docker's own rules, which forward it; not to EGRESS_CHAIN's refusal) and its
 * refusal chain (log, rate-limited; then REJECT, so programs fail at once instead of hanging; the
 * REJECT rules' counters are the computer's refusal count).
 */
export function computerRules(
  tag: string,
  generation: Generation,
  rules: ComputerRules,
): { chain: string; refuseChain: string; lines: string[] } {
  const chain = chainOf(tag, generation);
  const refuseChain = refuseChainOf(tag, generation);
  const refuse = (...match: string[]) => [...match, "-j", refuseChain];
  const dns = rules.resolvers.flatMap((resolver) => allow(`${resolver}/32`, [53]));
  const body: string[][] = [refuse("-d", rules.subnet)];
  switch (rules.level) {
    case "open":
      body.push(["-j", "RETURN"]);
      break;
    case "default":
      body.push(...dns, ...REFUSED_BY_DEFAULT.map((cidr) => refuse("-d", cidr)), ["-j", "RETURN"]);
      break;
    case "allowlist":
      body.push(...dns, ...rules.allowed.flatMap((entry) => allow(entry.cidr, entry.ports)), refuse());
      break;
    case "offline":
      body.push(refuse());
      break;
  }
  // rules are iptables-restore lines: the prefix is quoted to keep its space
  const refusal = [
    [...LOG_LIMIT, "-j", "LOG", "--log-prefix", `"${tag} "`, "--log-level", "info"],
    ["-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
    ["-j", "REJECT", "--reject-with", "icmp-admin-prohibited"],
  ];
  return {
    chain,
    refuseChain,
    lines: [
      `:${chain} - [0:0]`,
      `:${refuseChain} - [0:0]`,
      ...refusal.map((rule) => ["-A", refuseChain, ...rule].join(" ")),
      ...body.map((rule) => ["-A", chain, ...rule].join(" ")),
    ],
  };
}
