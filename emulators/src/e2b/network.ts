/**
 * E2B's outbound network settings of a sandbox (`allow_internet_access`, `network.allowOut` and
 * `network.denyOut`): read and checked as E2B's API does, and turned into the machine firewall's
 * rules as E2B's firewall decides: the ranges E2B always refuses first, then what allowOut allows
 * (allow beats deny), then what denyOut refuses, and whatever is left passes.
 *
 * Named difference: E2B matches a domain in allowOut by the TLS SNI (port 443) or HTTP Host (port
 * 80) of each connection. The emulator resolves the domain to its IPv4 addresses when the rules are
 * applied (create, update, resume) and allows those addresses on every port; a wildcard
 * (`*.example.com`) cannot be resolved, so it allows nothing here.
 */
import { lookup } from "node:dns/promises";
import { isIP, isIPv4 } from "node:net";
import type { OutboundRule, OutboundRules } from "../machines/firewall.ts";

/** E2B's shorthand for every IPv4 address (the SDK's ALL_TRAFFIC). */
export const ALL_TRAFFIC = "0.0.0.0/0";

/** What E2B refuses whatever a sandbox's rules say: private, shared, loopback and link-local IPv4. */
export const ALWAYS_DENIED = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
];

/** Where a sandbox's settings are kept on its disk: they change, a container's labels cannot. */
export const NETWORK_PATH = "/var/lib/cubicle-e2b/network.json";

const DOMAINS_NEED_ALL_TRAFFIC =
  "When specifying allowed domains in allow out, you must include 'ALL_TRAFFIC' in deny out to block all other traffic.";

export interface SandboxNetwork {
  /** As last given; null when never given. GET echoes it; it does not decide anything itself. */
  allowInternetAccess: boolean | null;
  allowOut: string[];
  /** Replaced by [ALL_TRAFFIC] when the request that set it said allow_internet_access false. */
  denyOut: string[];
}

export const OPEN_NETWORK: SandboxNetwork = { allowInternetAccess: null, allowOut: [], denyOut: [] };

/** The request's network settings cannot be used; E2B answers 400 with the message. */
export class BadNetwork extends Error {}

/** An IPv4 address or CIDR whose address is not 0.0.0.0 unless the prefix is /0 (E2B's IsSpecifiedIPOrCIDR). */
function isSpecifiedCidr(entry: string): boolean {
  const [address = "", prefix, ...rest] = entry.split("/");
  if (rest.length > 0 || !isIPv4(address)) return false;
  if (prefix === undefined) return address !== "0.0.0.0";
  if (!/^\d{1,2}$/.test(prefix) || Number(prefix) > 32) return false;
  return address !== "0.0.0.0" || prefix === "0";
}

const looksLikeAddress = (entry: string) => isIP(entry.split("/")[0] ?? "") !== 0;

const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/i;

function stringList(value: unknown, name: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((entry) => typeof entry !== "string")) {
    throw new BadNetwork(`${name} must be an array of strings`);
  }
  return value as string[];
}

/** E2B's validateEgressRules: deny entries are addresses, allow entries addresses or domains. */
function checked(allowOut: string[], denyOut: string[]): void {
  for (const entry of denyOut) {
    if (!isSpecifiedCidr(entry)) throw new BadNetwork(`invalid denied CIDR ${entry}`);
  }
  let domains = false;
  for (const entry of allowOut) {
    if (looksLikeAddress(entry)) {
      if (!isSpecifiedCidr(entry)) throw new BadNetwork(`invalid allowed address ${entry}`);
    } else if (DOMAIN.test(entry)) domains = true;
    else throw new BadNetwork(`invalid allowed domain ${entry}`);
  }
  if (domains && !denyOut.includes(ALL_TRAFFIC)) throw new BadNetwork(DOMAINS_NEED_ALL_TRAFFIC);
}

function settingsOf(allowInternetAccess: unknown, allowOut: unknown, denyOut: unknown) {
  if (
    allowInternetAccess !== undefined &&
    allowInternetAccess !== null &&
    typeof allowInternetAccess !== "boolean"
  ) {
    throw new BadNetwork("allow_internet_access must be a boolean");
  }
  const allow = stringList(allowOut, "allowOut");
  // E2B replaces the deny list, and keeps the allow list, of a request without internet access
  const deny = allowInternetAccess === false ? [ALL_TRAFFIC] : stringList(denyOut, "denyOut");
  checked(allow, deny);
  return { flag: typeof allowInternetAccess === "boolean" ? allowInternetAccess : null, allow, deny };
}

/** The settings of `POST /v2/sandboxes`: top-level `allow_internet_access`, `network.allowOut/denyOut`. */
export function networkOfCreate(
  body: Record<string, unknown>,
  network: Record<string, unknown>,
): SandboxNetwork {
  const { flag, allow, deny } = settingsOf(body.allow_internet_access, network.allowOut, network.denyOut);
  return { allowInternetAccess: flag, allowOut: allow, denyOut: deny };
}

/**
 * The settings of `PUT /sandboxes/{id}/network`: they replace the egress settings whole (an omitted
 * list is cleared); the stored allow_internet_access changes only when the body has it, as on E2B.
 */
export function networkOfUpdate(body: Record<string, unknown>, previous: SandboxNetwork): SandboxNetwork {
  const { flag, allow, deny } = settingsOf(body.allow_internet_access, body.allowOut, body.denyOut);
  return { allowInternetAccess: flag ?? previous.allowInternetAccess, allowOut: allow, denyOut: deny };
}

/** A damaged or missing file keeps the sandbox open, as one made without settings. */
export function networkOfFile(data: Buffer | null): SandboxNetwork {
  if (!data) return OPEN_NETWORK;
  try {
    const parsed = JSON.parse(data.toString("utf8")) as Partial<SandboxNetwork>;
    return {
      allowInternetAccess:
        typeof parsed.allowInternetAccess === "boolean" ? parsed.allowInternetAccess : null,
      allowOut: stringList(parsed.allowOut, "allowOut"),
      denyOut: stringList(parsed.denyOut, "denyOut"),
    };
  } catch {
    return OPEN_NETWORK;
  }
}

const cidrOf = (entry: string) => (entry.includes("/") ? entry : `${entry}/32`);

/** The IPv4 addresses a domain has now; none when it does not resolve (or is a wildcard). */
async function addressesOf(domain: string): Promise<string[]> {
  if (domain.startsWith("*.")) return [];
  try {
    return (await lookup(domain, { all: true, family: 4 })).map((found) => found.address);
  } catch {
    return [];
  }
}

/** The firewall rules that do what E2B does with `network`, domains resolved now. */
export async function outboundRulesOf(network: SandboxNetwork): Promise<OutboundRules> {
  const allowed: OutboundRule[] = [];
  for (const entry of network.allowOut) {
    const addresses = looksLikeAddress(entry) ? [entry] : await addressesOf(entry);
    for (const address of addresses) allowed.push({ cidr: cidrOf(address), verdict: "accept" });
  }
  return {
    rules: [
      ...ALWAYS_DENIED.map((cidr): OutboundRule => ({ cidr, verdict: "reject" })),
      ...allowed,
      ...network.denyOut.map((entry): OutboundRule => ({ cidr: cidrOf(entry), verdict: "reject" })),
    ],
    otherwise: "accept",
  };
}
