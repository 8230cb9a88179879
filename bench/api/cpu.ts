/**
 * CPU time of processes, from /proc: the api's, and the Postgres server's (its postmaster and the
 * backends serving the api's pool, which live as long as the pool's connections).
 */
import { readdirSync, readFileSync } from "node:fs";

/** Linux reports utime and stime in clock ticks of 1/100 s on every architecture Node runs on here. */
const TICKS_PER_SECOND = 100;

function stat(pid: number): { ppid: number; cpuSeconds: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone between listing and reading
  }
  // Fields after the command (which may hold spaces) in parentheses: state, ppid, … utime (14), stime (15).
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    ppid: Number(fields[1]),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND,
  };
}

/** User and system CPU seconds used so far by `pids` together (those still running). */
export function cpuSeconds(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (stat(pid)?.cpuSeconds ?? 0), 0);
}

/** The postmaster listening on `port` and its children now, found by its command line. */
export function postgresServerPids(port: number): number[] {
  const all = readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  const postmaster = all.find((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv[0]?.endsWith("/postgres") && argv[argv.indexOf("-p") + 1] === String(port);
    } catch {
      return false;
    }
  });
  if (postmaster === undefined) throw new Error(`no Postgres server process listens on port ${port}`);
  return [postmaster, ...all.filter((pid) => stat(pid)?.ppid === postmaster)];
}
