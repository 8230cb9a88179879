import { type ChildProcess, spawn } from "node:child_process";
import { readlink } from "node:fs/promises";
import { type FirewallRunner, localRunner } from "@cubicle/host/firewall-runner";
import { type Iptables, iptablesOf } from "@cubicle/host/iptables";

/**
 * A network namespace of its own with an empty firewall (and Docker's DOCKER-USER chain, which the
 * egress enforcer hooks), for tests of the enforcer's rules on a real iptables that no computer or
 * other test sees. Made with `unshare`, not `ip netns`, so that no mount appears that a starting
 * supervisor's DATA_DIR check would read.
 */
export interface NamespaceFirewall {
  /** Runs the firewall programs in the namespace. */
  runner: FirewallRunner;
  /** The enforcer's own iptables commands, on the namespace's firewall. */
  iptables: Iptables;
  close(): void;
}

export async function startNamespaceFirewall(): Promise<NamespaceFirewall> {
  const holder: ChildProcess = spawn("unshare", ["--net", "sleep", "infinity"], { stdio: "ignore" });
  await new Promise<void>((resolve, reject) => {
    holder.once("spawn", resolve);
    holder.once("error", reject);
  });
  const enter = [`--net=/proc/${holder.pid}/ns/net`];
  const runner: FirewallRunner = {
    where: `network namespace of process ${holder.pid}`,
    run: (program, args, input) => localRunner.run("nsenter", [...enter, program, ...args], input),
    follow: (program, args, onLine, onEnd) =>
      localRunner.follow("nsenter", [...enter, program, ...args], onLine, onEnd),
    nameservers: async () => [],
  };
  // until unshare has made the namespace, the process is still in this one
  const own = await readlink("/proc/self/ns/net");
  for (let tries = 0; (await readlink(`/proc/${holder.pid}/ns/net`)) === own; tries++) {
    if (tries === 100) throw new Error("unshare made no network namespace in 2 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const iptables = iptablesOf(runner);
  await iptables.iptables(["-N", "DOCKER-USER"]);
  return {
    runner,
    iptables,
    close: () => holder.kill("SIGKILL"),
  };
}
