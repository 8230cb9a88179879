import { spawnSync } from "node:child_process";

/**
 * Computers may use the internet (their browser does), but not the host they run on: an iptables
 * rule drops new connections from the computers' bridge to the host's own addresses (where
 * Postgres, the api or the supervisor may listen on all interfaces). Replies to connections the
 * host opens (the screen proxy reaching a published port) are not new, so they pass.
 *
 * Needs root and iptables on the Docker host; elsewhere (rootless, remote engine) this reports
 * "off" and the operator adds an equivalent rule (README "Network").
 */
export function ensureHostFirewall(bridge: string): "on" | "off" {
  const rule = ["INPUT", "-i", bridge, "-m", "conntrack", "--ctstate", "NEW", "-j", "REJECT"];
  const run = (args: string[]) =>
    spawnSync("iptables", ["-w", "5", ...args], { stdio: "ignore", timeout: 10_000 });
  if (process.getuid?.() !== 0) return "off";
  if (run(["-C", ...rule]).status === 0) return "on";
  return run(["-I", ...rule]).status === 0 ? "on" : "off";
}

export function hostFirewallActive(bridge: string): boolean {
  if (process.getuid?.() !== 0) return false;
  const args = [
    "-w",
    "5",
    "-C",
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
  return spawnSync("iptables", args, { stdio: "ignore", timeout: 10_000 }).status === 0;
}
