import { expect } from "vitest";

/**
 * A shell script run in a computer, as its user, next to a running Chromium: one line for the
 * script's own shell (the computer's namespaces: it runs in no sandbox), then one per Chromium
 * process. Each line: role, pid, user namespace, PID namespace, seccomp filter count, and for
 * Chromium its command line (NUL separators made spaces). Chromium is found by process name: a
 * pattern on command lines would find this script too.
 */
export const CHROMIUM_SANDBOX_PROBE = `line() { echo "$1 $2 $(readlink /proc/$2/ns/user) $(readlink /proc/$2/ns/pid) $(awk '/^Seccomp_filters:/ { print $2 }' /proc/$2/status) $3"; }
line shell $$
for pid in $(pgrep -x chromium); do
  args=$(tr '\\0' ' ' < /proc/$pid/cmdline) || continue
  case " $args" in
    *" --type=renderer "*) line renderer $pid "$args" ;;
    *) line chromium $pid "$args" ;;
  esac
done`;

interface Process {
  role: string;
  pid: string;
  userNs: string;
  pidNs: string;
  seccompFilters: number;
  commandLine: string;
}

export interface ChromiumSandboxReport {
  shell: Process;
  renderers: Process[];
  /** Every Chromium process, renderers included. */
  chromium: Process[];
}

/** The probe's output, read; null while no renderer runs yet. */
export function chromiumSandboxReport(stdout: string): ChromiumSandboxReport | null {
  const processes = stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line): Process => {
      const [role = "", pid = "", userNs = "", pidNs = "", filters = "", ...args] = line.split(" ");
      return { role, pid, userNs, pidNs, seccompFilters: Number(filters), commandLine: args.join(" ") };
    });
  const shell = processes.find((process) => process.role === "shell");
  const renderers = processes.filter((process) => process.role === "renderer");
  if (!shell || renderers.length === 0) return null;
  return { shell, renderers, chromium: processes.filter((process) => process.role !== "shell") };
}

/**
 * Chromium's own sandbox is on: every renderer runs in a user and a PID namespace other than the
 * computer's, under a seccomp filter of Chromium's on top of the computer's, and no Chromium
 * process was started with `--no-sandbox`.
 */
export function expectChromiumSandboxed(report: ChromiumSandboxReport | null): void {
  if (!report) throw new Error("no Chromium renderer runs");
  const { shell } = report;
  expect(shell.userNs).toMatch(/^user:\[\d+\]$/);
  expect(shell.pidNs).toMatch(/^pid:\[\d+\]$/);
  for (const renderer of report.renderers) {
    const what = `renderer ${renderer.pid}`;
    expect(renderer.userNs, `${what}'s user namespace`).toMatch(/^user:\[\d+\]$/);
    expect(renderer.userNs, `${what}'s user namespace`).not.toBe(shell.userNs);
    expect(renderer.pidNs, `${what}'s PID namespace`).toMatch(/^pid:\[\d+\]$/);
    expect(renderer.pidNs, `${what}'s PID namespace`).not.toBe(shell.pidNs);
    expect(renderer.seccompFilters, `${what}'s seccomp filters`).toBeGreaterThan(shell.seccompFilters);
  }
  for (const process of report.chromium) {
    expect(process.commandLine, `Chromium ${process.pid}'s command line`).not.toContain("--no-sandbox");
  }
}
