import { BlockList, isIP } from "node:net";
import {
  EGRESS_LEVELS,
  type EgressDestination,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
} from "@cubicle/providers/contract";
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

const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/i;

/** An allowed destination's host as the firewall takes it: an IPv4 block, or a name to resolve. */
export type Target = { kind: "cidr"; cidr: string } | { kind: "name"; name: string };

export function targetOf(host: string): Target | string {
  const [address, prefix, ...rest] = host.split("/");
  if (isIP(address ?? "") === 6) {
    return "an IPv6 destination: Docker computers have IPv4 only (their network has no IPv6)";
  }
  if (isIP(address ?? "") === 4) {
    if (rest.length > 0 || (prefix !== undefined && !/^(\d|[12]\d|3[0-2])$/.test(prefix))) {
      return "a CIDR block's prefix is a number from 0 to 32";
    }
    return { kind: "cidr", cidr: `${address}/${prefix ?? "32"}` };
  }
  if (prefix !== undefined) return "a CIDR block is an IPv4 address, a slash and a prefix length";
  if (!HOST_NAME.test(host)) return "a DNS name, an IPv4 address or an IPv4 CIDR block";
  return { kind: "name", name: host.toLowerCase() };
}

const DestinationSchema = z.object({
  host: z.string().superRefine((host, context) => {
    const target = targetOf(host);
    if (typeof target === "string") context.addIssue({ code: "custom", message: target });
  }),
  ports: z
    .array(z.number().int().min(1).max(65_535))
    .max(64)
    .refine((ports) => new Set(ports).size === ports.length, "each port once"),
}) satisfies z.ZodType<EgressDestination>;

/** A policy as the routes accept it; every problem is listed. */
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
