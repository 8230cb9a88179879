// A build that runs beside the tests instead of before them: its output goes to a log file, and
// when it ends a status file says whether it succeeded and where the log is. A test that needs
// what it builds waits for the status file (e2e/testing/compose.ts reads it), so the suites that do
// not need it start at once. Plain Node (no dependencies).
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./run.mjs";

/**
 * Starts `command args` in the background. Returns the status file's path (for the tests, which
 * are told it in `statusVariable`), the log's, a promise of the exit code, and `stop()`, which ends
 * the build when nothing is left to wait for it.
 */
export function startInBackground(name, command, args) {
  const dir = mkdtempSync(join(tmpdir(), `cubicle-${name}-`));
  const log = join(dir, "build.log");
  const status = join(dir, "status.json");
  const out = openSync(log, "a");
  console.log(`\n> ${[command, ...args].join(" ")} (in the background; log: ${log})`);
  const child = spawn(command, args, { cwd: root, stdio: ["ignore", out, out] });
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      const result = { ok: code === 0, log, exit: code ?? signal };
      // written whole, then renamed: a reader never sees half of it
      writeFileSync(`${status}.partial`, JSON.stringify(result));
      renameSync(`${status}.partial`, status);
      resolve(code ?? 1);
    });
  });
  return {
    status,
    log,
    exited,
    stop: () => child.exitCode === null && child.signalCode === null && child.kill("SIGTERM"),
    /** The log's last `lines` lines. */
    tail: (lines = 40) => readFileSync(log, "utf8").trimEnd().split("\n").slice(-lines).join("\n"),
  };
}
