/**
 * Daytona's outbound network settings of a sandbox: what `POST /sandbox` and
 * `POST /sandbox/{id}/network-settings` take, checked as Daytona checks them
 * (apps/api/src/sandbox/utils/network-validation.util.ts, v0.190), and what they mean as the
 * machine's firewall rules. Daytona's runner enforces them with an iptables chain per sandbox
 * (RETURN for each allowed CIDR, then DROP), jumped to from DOCKER-USER by the sandbox's address;
 * the emulator does the same through the shared machine firewall.
 */
import { isIPv4 } from "node:net";
import type { OutboundRules } from "../machines/firewall.ts";
import { DaytonaHttpError } from "./errors.ts";

export interface NetworkSettings {
  /** Nothing goes out; wins over the allow lists. */
  networkBlockAll: boolean;
  /** Comma-separated IPv4 CIDRs, each with its prefix; with the domains, everything else is dropped. */
  networkAllowList?: string;
  /** Comma-separated domain names, each optionally `*.`-prefixed. */
  domainAllowList?: string;
}

export const OPEN_NETWORK: NetworkSettings = { networkBlockAll: false };

/** Daytona's caps on the two lists. */
const MAX_NETWORKS = 10;
const MAX_DOMAINS = 10;
const DOMAIN = /^(\*\.)?([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,}$/;

const entries = (list: string | undefined) =>
  (list ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");

const invalid = (message: string) => new DaytonaHttpError(400, message, "BAD_REQUEST");

function checkNetworks(list: string): void {
  const networks = entries(list);
  for (const network of networks) {
    const [address = "", prefix, extra] = network.split("/");
    if (!isIPv4(address))
      throw invalid(`Invalid IP address: "${address}" in network "${network}". Must be a valid IPv4 address`);
    if (prefix === undefined || prefix === "")
      throw invalid(`Invalid network format: "${network}". Missing CIDR prefix length (e.g., /24)`);
    if (extra !== undefined || !/^\d+$/.test(prefix) || Number(prefix) > 32)
      throw invalid(`Invalid CIDR prefix length: ${network}. Prefix must be between 0 and 32`);
  }
  if (networks.length > MAX_NETWORKS)
    throw invalid(`Network allow list cannot contain more than ${MAX_NETWORKS} networks`);
}

function checkDomains(list: string): void {
  const domains = entries(list);
  for (const domain of domains) {
    if (!DOMAIN.test(domain))
      throw invalid(
        `Invalid domain: "${domain}". Must be a valid ASCII domain (optional leading *.) with an alphabetic top-level domain`,
      );
  }
  if (domains.length > MAX_DOMAINS)
    throw invalid(`Domain allow list cannot contain more than ${MAX_DOMAINS} domains`);
}

/** The three fields of a request body, typed and checked; absent ones undefined. */
function fieldsOf(body: Record<string, unknown>): Partial<NetworkSettings> {
  const { networkBlockAll, networkAllowList, domainAllowList } = body;
  if (networkBlockAll !== undefined && typeof networkBlockAll !== "boolean")
    throw invalid("networkBlockAll must be a boolean value");
  for (const [name, value] of Object.entries({ networkAllowList, domainAllowList })) {
    if (value !== undefined && typeof value !== "string") throw invalid(`${name} must be a string`);
  }
  if (typeof networkAllowList === "string") checkNetworks(networkAllowList);
  if (typeof domainAllowList === "string") checkDomains(domainAllowList);
  return {
    ...(networkBlockAll !== undefined ? { networkBlockAll } : {}),
    ...(typeof networkAllowList === "string" ? { networkAllowList } : {}),
    ...(typeof domainAllowList === "string" ? { domainAllowList } : {}),
  };
}

/** A non-empty list as given, or nothing: Daytona keeps no empty list. */
const kept = (name: "networkAllowList" | "domainAllowList", list: string | undefined) =>
  entries(list).length > 0 ? { [name]: list } : {};

/** The settings `POST /sandbox` asks for (all optional: a sandbox is open by default). */
export function createdSettings(body: Record<string, unknown>): NetworkSettings {
  const fields = fieldsOf(body);
  return {
    networkBlockAll: fields.networkBlockAll ?? false,
    ...kept("networkAllowList", fields.networkAllowList),
    ...kept("domainAllowList", fields.domainAllowList),
  };
}

/**
 * The settings after `POST /sandbox/{id}/network-settings`, merged as Daytona merges them: block-all
 * clears the CIDR list; a non-empty CIDR list lifts block-all; block-all false alone clears the CIDR
 * list; an empty string clears its list; the domain list is replaced on its own.
 */
export function updatedSettings(current: NetworkSettings, body: Record<string, unknown>): NetworkSettings {
  const fields = fieldsOf(body);
  if (Object.keys(fields).length === 0)
    throw invalid("At least one of networkBlockAll, networkAllowList or domainAllowList must be provided");
  let { networkBlockAll } = current;
  let networkAllowList = current.networkAllowList;
  if (fields.networkAllowList !== undefined) {
    networkAllowList = fields.networkAllowList;
    if (entries(networkAllowList).length > 0) networkBlockAll = false;
  }
  if (fields.networkBlockAll !== undefined) {
    networkBlockAll = fields.networkBlockAll;
    if (networkBlockAll || fields.networkAllowList === undefined) networkAllowList = undefined;
  }
  const domainAllowList = fields.domainAllowList ?? current.domainAllowList;
  return {
    networkBlockAll,
    ...kept("networkAllowList", networkAllowList),
    ...kept("domainAllowList", domainAllowList),
  };
}

/** The IPv4 addresses a name has now; none when it does not resolve. */
export type ResolveName = (name: string) => Promise<string[]>;

/**
 * The machine's outbound rules for the settings, or null when nothing is restricted. Block-all
 * drops everything. An allow list accepts its CIDRs and the addresses its domains resolve to now,
 * plus `resolvers` while domains are listed (so the sandbox can look them up), and drops the rest.
 * A `*.` domain is resolved at its apex: the emulator sees no names on the wire (Daytona's proxy
 * does, on the web ports).
 */
export async function outboundRulesOf(
  settings: NetworkSettings,
  resolve: ResolveName,
  resolvers: readonly string[],
): Promise<OutboundRules | null> {
  if (settings.networkBlockAll) return { rules: [], otherwise: "reject" };
  const networks = entries(settings.networkAllowList);
  const domains = entries(settings.domainAllowList);
  if (networks.length === 0 && domains.length === 0) return null;
  const resolved = await Promise.all(domains.map((domain) => resolve(domain.replace(/^\*\./, ""))));
  const named = [...new Set(resolved.flat())].map((address) => `${address}/32`);
  const lookups = domains.length > 0 ? resolvers.map((address) => `${address}/32`) : [];
  const cidrs = [...new Set([...networks, ...named, ...lookups])];
  return { rules: cidrs.map((cidr) => ({ cidr, verdict: "accept" })), otherwise: "reject" };
}
