import { isIPv4, isIPv6 } from "node:net";
import {
  type EgressAllowlistLimits,
  type EgressPolicy,
  MAX_EGRESS_DESTINATIONS,
  ProviderError,
} from "../contract/index.ts";

/**
 * What an allowlist may hold on E2B: its rules name addresses, blocks and domains but no ports, and
 * it documents no cap on their number, so the api's own cap holds.
 */
export const E2B_ALLOWLIST: EgressAllowlistLimits = {
  ports: false,
  maxDestinations: MAX_EGRESS_DESTINATIONS,
};

/** E2B's shorthand for every IPv4 address (the SDK's ALL_TRAFFIC). */
const ALL_TRAFFIC = "0.0.0.0/0";

/** E2B's sandboxes' only name server: an allowlist lets it through, for the level's "and DNS". */
const E2B_NAMESERVER = "8.8.8.8";

/**
 * What E2B refuses whatever a sandbox's rules say (its DeniedSandboxCIDRs): an allowlist entry
 * inside one of these would allow nothing, so it is refused instead.
 */
const E2B_ALWAYS_DENIED: ReadonlyArray<readonly [string, number]> = [
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
];

/** A sandbox's outbound settings as E2B takes them: allow beats deny; what neither names passes. */
export interface E2bNetwork {
  allowOut: string[];
  denyOut: string[];
}

const toNumber = (address: string) =>
  address.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);

/** Whether every address of `host` (an IPv4 address or block) lies in a range E2B always refuses. */
function alwaysDenied(host: string): boolean {
  const [address = "", prefix = "32"] = host.split("/");
  const bits = Number(prefix);
  return E2B_ALWAYS_DENIED.some(([range, rangeBits]) => {
    if (bits < rangeBits) return false;
    const block = 2 ** (32 - rangeBits);
    return Math.floor(toNumber(address) / block) === Math.floor(toNumber(range) / block);
  });
}

const unsupported = (message: string) => new ProviderError("EGRESS_UNSUPPORTED", message);

/**
 * The E2B settings that enforce `policy`. `open` and `default` are the same here, and set no
 * rules: E2B itself always refuses private, shared (100.64/10), loopback and link-local addresses
 * (the cloud metadata service with them), which is what `default` adds to `open`. `offline`
 * refuses every address (rather than allow_internet_access false, which a later update that
 * leaves it out would silently undo). An allowlist allows its destinations and E2B's name server
 * and refuses the rest; E2B matches a DNS name by the TLS SNI or HTTP Host of connections on ports
 * 443 and 80, so a named destination is reachable on those two ports only.
 */
export function e2bNetworkOf(policy: EgressPolicy): E2bNetwork {
  switch (policy.level) {
    case "open":
    case "default":
      return { allowOut: [], denyOut: [] };
    case "offline":
      return { allowOut: [], denyOut: [ALL_TRAFFIC] };
    case "allowlist":
      for (const { host } of policy.allow) {
        if (isIPv6(host.split("/")[0] ?? "")) {
          throw unsupported(
            `E2B enforces IPv4 rules only: list an IPv4 address or a name instead of ${host}`,
          );
        }
        if (isIPv4(host.split("/")[0] ?? "") && alwaysDenied(host)) {
          throw unsupported(
            `E2B always refuses private, loopback and link-local addresses, so ${host} cannot be allowed there`,
          );
        }
      }
      return {
        allowOut: [...policy.allow.map((entry) => entry.host), E2B_NAMESERVER],
        denyOut: [ALL_TRAFFIC],
      };
  }
}
