/**
 * A computer's egress policy: where its programs may open connections. Enforced outside the machine
 * (the Docker supervisor's firewall rules on the computers' network; a vendor's network settings),
 * so nothing that runs inside it can change it. The host Cubicle runs on is never reachable from a
 * Docker computer, whatever the level.
 */

/**
 * - `open`: everything but the host itself.
 * - `default`: the public internet; refused are loopback, the host, private ranges (RFC 1918, CGNAT
 *   100.64/10, unique-local IPv6), link-local (169.254/16 with the cloud metadata address,
 *   fe80::/10), multicast and the other computers. DNS goes through the resolvers the policy allows.
 * - `allowlist`: only the listed destinations (and DNS).
 * - `offline`: nothing at all, DNS included.
 */
export const EGRESS_LEVELS = ["open", "default", "allowlist", "offline"] as const;
export type EgressLevel = (typeof EGRESS_LEVELS)[number];

/** One allowed destination of an `allowlist` policy. */
export interface EgressDestination {
  /**
   * A DNS name (resolved by the enforcing side, and again as its records expire), an IPv4 or IPv6
   * address, or a CIDR block.
   */
  host: string;
  /** TCP and UDP ports; empty means every port. */
  ports: number[];
}

export interface EgressPolicy {
  level: EgressLevel;
  /** The destinations an `allowlist` policy lets through; empty for every other level. */
  allow: EgressDestination[];
}

/** The policy every computer has until an admin sets another. */
export const DEFAULT_EGRESS: EgressPolicy = { level: "default", allow: [] };

/** At most this many destinations in one allowlist: each becomes firewall rules. */
export const MAX_EGRESS_DESTINATIONS = 64;

/** At most this many ports in one destination, for the same reason. */
export const MAX_EGRESS_PORTS = 32;

/** A connection the policy refused. */
export interface EgressRefusal {
  /** ISO 8601. */
  at: string;
  /** The address the computer tried to reach. */
  address: string;
  /** null for protocols without ports. */
  port: number | null;
  protocol: string;
}

/** What a machine's policy refused: a running count, and the latest refusals after a cursor. */
export interface EgressReport {
  /** Every refusal since the machine's policy was first applied on this backend. */
  refusedTotal: number;
  /** Refusals after the cursor given, oldest first; the backend keeps a bounded number. */
  refusals: EgressRefusal[];
  /** Pass it back to get only what came after. */
  cursor: string;
}
