// Helpers for the repository scripts. Plain Node (no dependencies): they run before `npm ci`.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Runs a command to completion in the repository root; exits this process if it fails. */
export function runOrExit(command, args, options = {}) {
  console.log(`\n> ${[command, ...args].join(" ")}`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", ...options });
  if (result.status !== 0) {
    console.error(`\n✗ ${command} ${args.join(" ")} failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status || 1);
  }
}

/**
 * Starts a command in the repository root and resolves when it succeeds; exits this process if it
 * fails. For a step that can run while this process does another (`runOrExit` blocks it).
 */
export function runOrExitAsync(command, args, options = {}) {
  console.log(`\n> ${[command, ...args].join(" ")} (alongside the next steps)`);
  const child = spawn(command, args, { cwd: root, stdio: "inherit", ...options });
  return new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      if (code === 0) return resolve();
      console.error(`\n✗ ${command} ${args.join(" ")} failed (exit ${code ?? signal})`);
      process.exit(code || 1);
    });
  });
}

/** Installs the locked dependencies when node_modules is missing or older than the lockfile. */
export function ensureInstalled() {
  const installed = join(root, "node_modules", ".package-lock.json");
  const lockfile = join(root, "package-lock.json");
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lockfile).mtimeMs) return;
  runOrExit("npm", ["ci", "--no-audit", "--no-fund"]);
}

/** Runs a long-lived child in the foreground, passing Ctrl-C and SIGTERM on, and exits with it. */
export function runForeground(command, args, env) {
  const child = spawn(command, args, { cwd: root, stdio: "inherit", env });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
