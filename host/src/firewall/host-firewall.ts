import type { Iptables } from "./iptables.ts";

/**
 * The host-side name of the computers' bridge, so a host firewall rule can name it (the
 * supervisor names its computers' network's bridge so).
 */
export const BRIDGE_NAME = "cubicle0";

/**
 * The rule that keeps computers from the host itself, as iptables arguments: new connections from
 * the computers' bridge to the host's own addresses (where Postgres, the api or the supervisor may
 * listen on all interfaces) are refused. Replies to connections the host opens (the screen proxy
 * reaching a published port) are not new, so they pass. `npm run deploy:init` and `cubicle doctor`
 * name the same rule.
 */
export const hostFirewallRule = (bridge: string = BRIDGE_NAME) => [
  "INPUT",
  "-i",
  bridge,
  "-m",
  "conntrack",
  "--ctstate",
  "NEW",
  "-j",
  "REJECT",
];

/**
 * Adds the rule unless present, through the firewall runner (root on the Docker host, or the
 * Compose stack's firewall container); where neither can (rootless, remote engine) this reports
 * "off" and the operator adds it (README "Network").
 */
export async function ensureHostFirewall(fw: Iptables, bridge: string): Promise<"on" | "off"> {
  const rule = hostFirewallRule(bridge);
  return (await fw.succeeds(["-C", ...rule])) || (await fw.succeeds(["-I", ...rule])) ? "on" : "off";
}

export const hostFirewallActive = (fw: Iptables, bridge: string) =>
  fw.succeeds(["-C", ...hostFirewallRule(bridge)]);
