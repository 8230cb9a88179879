import { BlockList, isIP } from "node:net";
import {
  EGRESS_LEVELS,
  type EgressDestination,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
  MAX_EGRESS_PORTS,
} from "@cubicle/providers/contract";
import { egressHostProblem } from "@cubicle/providers/kernel";
import { z } from "zod";

/**
 * What `default` refuses besides the other computers: "this network", loopback, RFC 1918, CGNAT,
 * link-local (the cloud metadata service), multicast, and the reserved block with broadcast.
 */
export const REFUSED_BY_DEFAULT = [
  "0.0.0.0/8",
  "127.0.0.0/8",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "224.0.0.0/4",
  "240.0.0.0/4",
] as const;

const refused = new BlockList();
for (const cidr of REFUSED_BY_DEFAULT) {
  const [network, prefix] = cidr.split("/");
  refused.addSubnet(network as string, Number(prefix), "ipv4");
}

/** Whether the `default` level would let a computer reach this IPv4 address. */
export const isPublicIPv4 = (address: string) => isIP(address) === 4 && !refused.check(address, "ipv4");

/** An allowed destination's host as the firewall takes it: an IPv4 block, or a name to resolve. */
export type Target = { kind: "cidr"; cidr: string } | { kind: "name"; name: string };

/**
 * The firewall's reading of a host that passed `egressHostProblem`; a string says why Docker
 * computers cannot be given it.
 */
export function targetOf(host: string): Target | string {
  const [address, prefix] = host.split("/");
  if (isIP(address ?? "") === 6) {
    return "an IPv6 destination: Docker computers have IPv4 only (their network has no IPv6)";
  }
  if (isIP(address ?? "") === 4) return { kind: "cidr", cidr: `${address}/${prefix ?? "32"}` };
  return { kind: "name", name: host.toLowerCase() };
}

const DestinationSchema = z.object({
  host: z.string().superRefine((host, context) => {
    const problem = egressHostProblem(host);
    if (problem) context.addIssue({ code: "custom", message: problem });
  }),
  ports: z
    .array(z.number().int().min(1).max(65_535))
    .max(MAX_EGRESS_PORTS)
    .refine((ports) => new Set(ports).size === ports.length, "each port once"),
}) satisfies z.ZodType<EgressDestination>;

/**
 * A policy as the routes accept it; every problem is listed. What is well formed but beyond Docker
 * computers (IPv6) is `unenforceable`'s to say.
 */
export const EgressPolicySchema = z
  .object({
    level: z.enum(EGRESS_LEVELS),
    allow: z
      .array(DestinationSchema)
      .max(MAX_EGRESS_DESTINATIONS, `at most ${MAX_EGRESS_DESTINATIONS} destinations`)
      .default([]),
  })
  .superRefine((policy, context) => {
    if (policy.level !== "allowlist" && policy.allow.length > 0) {
      context.addIssue({
        code: "custom",
        path: ["allow"],
        message: `only an allowlist policy lists destinations (level is ${policy.level})`,
      });
    }
  }) satisfies z.ZodType<EgressPolicy, unknown>;

/** Why Docker computers cannot be given this well-formed policy, or null when they can. */
export function unenforceable(policy: EgressPolicy): string | null {
  for (const destination of policy.allow) {
    const target = targetOf(destination.host);
    if (typeof target === "string") return target;
  }
  return null;
}
