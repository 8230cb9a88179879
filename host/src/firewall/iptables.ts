import type { FirewallRunner } from "./runner.ts";

/** Waits this long for the xtables lock another program (Docker, another supervisor) holds. */
const LOCK_WAIT = ["-w", "10"];

/** The filter table's commands the egress rules and the host firewall rule need, run by `runner`. */
export function iptablesOf(runner: FirewallRunner) {
  const iptables = (args: string[], family: 4 | 6 = 4) =>
    runner.run(family === 4 ? "iptables" : "ip6tables", [...LOCK_WAIT, ...args]);
  return {
    iptables,
    succeeds: (args: string[], family: 4 | 6 = 4) =>
      iptables(args, family).then(
        () => true,
        () => false,
      ),
    /**
     * Applies `lines` to the filter table as one transaction (iptables-restore --noflush): with the
     * nf_tables backend the kernel commits the batch at once, so no packet sees half of it. A chain
     * declared in it (`:NAME - [0:0]`) is created, or emptied when it exists.
     */
    restore: (lines: string[]) =>
      runner.run("iptables-restore", [...LOCK_WAIT, "--noflush"], `*filter\n${lines.join("\n")}\nCOMMIT\n`),
    /** A chain's rules as `-A CHAIN …` lines; null when the chain does not exist. */
    chainRules: (chain: string) =>
      iptables(["-S", chain]).then(
        (out) => out.split("\n").filter((line) => line.startsWith("-A ")),
        () => null,
      ),
    /** How many packets the chain's REJECT rules refused; 0 when the chain does not exist. */
    async rejectedPackets(chain: string): Promise<number> {
      const out = await iptables(["-L", chain, "-n", "-v", "-x"]).catch(() => "");
      let total = 0;
      for (const line of out.split("\n")) {
        const fields = line.trim().split(/\s+/);
        if (fields[2] === "REJECT") total += Number(fields[0]) || 0;
      }
      return total;
    },
  };
}

export type Iptables = ReturnType<typeof iptablesOf>;
