import { readFileSync } from "node:fs";

// USER_HZ: 100 on every Linux the bench runs on (x86-64 and arm64 kernels fix it there).
const TICKS_PER_SECOND = 100;

/** CPU seconds `pid` (all its threads) has used so far, user and system, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which may hold spaces and parentheses: state is the first.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** A meter of the CPU `pids` use from now on, as a percentage of one core per process. */
export function cpuMeter(pids: readonly number[]): () => number[] {
  const started = performance.now();
  const before = pids.map(cpuSeconds);
  return () => {
    const seconds = (performance.now() - started) / 1000;
    return pids.map((pid, i) => ((cpuSeconds(pid) - (before[i] as number)) / seconds) * 100);
  };
}
