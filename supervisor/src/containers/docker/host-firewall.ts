import { spawnSync } from "node:child_process";
import { BRIDGE_NAME } from "./network.ts";

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

const iptables = (args: string[]) =>
  spawnSync("iptables", ["-w", "5", ...args], { stdio: "ignore", timeout: 10_000 }).status === 0;

/**
 * Adds the rule unless present. Needs root and iptables on the Docker host; elsewhere (rootless,
 * remote engine) this reports "off" and the operator adds it (README "Network").
 */
export function ensureHostFirewall(bridge: string): "on" | "off" {
  if (process.getuid?.() !== 0) return "off";
  const rule = hostFirewallRule(bridge);
  return iptables(["-C", ...rule]) || iptables(["-I", ...rule]) ? "on" : "off";
}

export function hostFirewallActive(bridge: string): boolean {
  return process.getuid?.() === 0 && iptables(["-C", ...hostFirewallRule(bridge)]);
}
