import { shellQuote } from "../kernel/shell-quote.ts";

/**
 * One line a vendor's command API runs: the command in its own bash, in its folder, with its
 * variables (vendors' command calls differ in which of these they take) and no input. It runs in
 * a process session of its own (`setsid --wait` passes its exit status on): vendors kill what a
 * command call or its session started when it ends, and what a command leaves running (a screen's
 * servers, a bot's daemon) must outlive it, as on every other backend.
 */
export function commandLine(command: string, env: Record<string, string>, cwd: string): string {
  const assignments = Object.entries(env).map(([name, value]) => shellQuote(`${name}=${value}`));
  return `cd -- ${shellQuote(cwd)} && env ${assignments.join(" ")} setsid --wait /bin/bash -c ${shellQuote(command)} </dev/null`;
}
