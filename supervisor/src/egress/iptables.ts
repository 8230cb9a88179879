import { spawn } from "node:child_process";

/** Waits this long for the xtables lock another program (Docker, another supervisor) holds. */
const LOCK_WAIT = ["-w", "10"];

export class IptablesError extends Error {
  override name = "IptablesError";
}

function run(program: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      timeout: 30_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", (error) => reject(new IptablesError(`${program}: ${error.message}`)));
    child.once("close", (code) => {
      if (code === 0) resolve(stdout);
      else reject(new IptablesError(`${program} ${args.join(" ")} failed (${code}): ${stderr.trim()}`));
    });
    child.stdin?.end(input);
  });
}

export const iptables = (args: string[], family: 4 | 6 = 4) =>
  run(family === 4 ? "iptables" : "ip6tables", [...LOCK_WAIT, ...args]);

export const succeeds = (args: string[], family: 4 | 6 = 4) =>
  iptables(args, family).then(
    () => true,
    () => false,
  );

/**
 * Applies `lines` to the filter table as one transaction (iptables-restore --noflush): with the
 * nf_tables backend the kernel commits the batch at once, so no packet sees half of it. A chain
 * declared in it (`:NAME - [0:0]`) is created, or emptied when it exists.
 */
export const restore = (lines: string[]) =>
  run("iptables-restore", [...LOCK_WAIT, "--noflush"], `*filter\n${lines.join("\n")}\nCOMMIT\n`);

/** A chain's rules as `-A CHAIN …` lines; null when the chain does not exist. */
export const chainRules = (chain: string) =>
  iptables(["-S", chain]).then(
    (out) => out.split("\n").filter((line) => line.startsWith("-A ")),
    () => null,
  );

/** How many packets the chain's REJECT rules refused; 0 when the chain does not exist. */
export async function rejectedPackets(chain: string): Promise<number> {
  const out = await iptables(["-L", chain, "-n", "-v", "-x"]).catch(() => "");
  let total = 0;
  for (const line of out.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields[2] === "REJECT") total += Number(fields[0]) || 0;
  }
  return total;
}
