import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { CommandExitError, type Sandbox } from "@e2b/desktop";
import { ProviderError } from "../contract/index.ts";
import { HOME_FILES_SCRIPT, HOME_SWAP_SCRIPT } from "../kernel/home-scripts.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { asProviderError } from "./sandboxes.ts";

/** The sandbox user's home on E2B's desktop template. */
const USER_HOME = "/home/user";
/** The computer's portable home: what checkpoints carry and file tools may touch. */
export const HOME = `${USER_HOME}/cubicle-home`;
/** Cubicle's programs and state in the sandbox, outside the portable home. */
const KIT_DIR = `${USER_HOME}/.cubicle/kit`;
export const SCRATCH_DIR = `${USER_HOME}/.cubicle/scratch`;

const computerImage = createRequire(import.meta.url);
const imageScript = (name: string) =>
  readFileSync(computerImage.resolve(`@cubicle/computer-image/scripts/${name}`), "utf8");
const kitScript = (name: string) => readFileSync(new URL(`./kit/${name}`, import.meta.url), "utf8");

/**
 * What a sandbox gets at each provision (a resumed one may come from an older Cubicle): the
 * Docker computer's own browser wrapper and browser helpers, which run unchanged with another
 * state folder and display numbering, and E2B's screen servers and output-capping runner.
 */
const KIT: Record<string, string> = {
  "lib.sh": imageScript("lib.sh"),
  browser: imageScript("browser"),
  browsers: imageScript("browsers"),
  screen: kitScript("screen"),
  run: kitScript("run"),
  "home-files.pl": HOME_FILES_SCRIPT,
  "home-swap.sh": HOME_SWAP_SCRIPT,
};

/** What the kit's shell helpers need to find their state and screens (lib.sh). */
const KIT_ENV = {
  CUBICLE_RUN_DIR: `${USER_HOME}/.cubicle/run`,
  CUBICLE_DISPLAY_BASE: "0",
};

export const kitProgram = (name: keyof typeof KIT & string) => `${KIT_DIR}/${name}`;

export async function installKit(sandbox: Sandbox): Promise<void> {
  try {
    await sandbox.files.write(
      Object.entries(KIT).map(([name, text]) => ({ path: `${KIT_DIR}/${name}`, data: text })),
    );
  } catch (error) {
    throw asProviderError("installing Cubicle's helpers in the sandbox", error);
  }
  const setUp = await kitCommand(
    sandbox,
    `chmod 0755 ${shellQuote(KIT_DIR)}/* && mkdir -p ${shellQuote(HOME)} ${shellQuote(SCRATCH_DIR)} && chmod 0700 ${shellQuote(SCRATCH_DIR)}`,
    // the portable home may not exist yet: this makes it
    { timeoutMs: 30_000, cwd: USER_HOME },
  );
  if (setUp.exitCode !== 0) throw failure("setting up the sandbox", setUp);
}

export interface KitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * One short helper command, run to its end (a non-zero exit is a result here, not an error).
 * Only for commands whose output is small: the SDK keeps all of it in memory.
 */
export async function kitCommand(
  sandbox: Sandbox,
  command: string,
  options: { timeoutMs: number; env?: Record<string, string>; cwd?: string },
): Promise<KitResult> {
  try {
    const result = await sandbox.commands.run(command, {
      envs: { ...KIT_ENV, HOME, ...options.env },
      cwd: options.cwd ?? HOME,
      timeoutMs: options.timeoutMs,
    });
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  } catch (error) {
    if (error instanceof CommandExitError) {
      return { exitCode: error.exitCode, stdout: error.stdout, stderr: error.stderr };
    }
    throw asProviderError("running a helper in the sandbox", error);
  }
}

/** `perl home-files.pl <home> <op> <path> [args]` as shell words. */
export function homeFilesCommand(op: string, path: string, args: string[] = []): string {
  return ["perl", kitProgram("home-files.pl"), HOME, op, path, ...args].map(shellQuote).join(" ");
}

export function failure(what: string, result: KitResult): ProviderError {
  const said = (result.stderr || result.stdout).trim().slice(-500) || `exit status ${result.exitCode}`;
  return new ProviderError("PROVIDER_FAILURE", `${what} failed: ${said}`);
}
