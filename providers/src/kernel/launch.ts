import {
  type CommandEvent,
  type Launched,
  type LaunchOptions,
  type LaunchRequest,
  type MachineRef,
  ProviderError,
  type SandboxProvider,
} from "../contract/index.ts";
import { homeRelativePath } from "./home-path.ts";
import { shellQuote } from "./shell-quote.ts";

/**
 * How a machine starts each app: the machine's own program for it, and shell text of fixed
 * arguments that come before the request's own (expanded on the machine, so `"$HOME"` works).
 */
export type AppPrograms = Record<Launched["app"], { program: string; shellArgs?: string }>;

const LAUNCH_TIMEOUT_MS = 15_000;

type CommandMachine = Pick<SandboxProvider, "kind" | "run" | "listFiles" | "openScreen" | "screenEnv">;

/**
 * `launch` for every backend whose commands reach its screens: the request becomes a short shell
 * command that starts the program detached (its own session, no output pipes held open), so the
 * command returns at once and the app outlives it.
 */
export async function launchByCommand(
  machine: CommandMachine,
  programs: AppPrograms,
  ref: MachineRef,
  screen: number,
  request: LaunchRequest,
  options: LaunchOptions,
): Promise<Launched> {
  const env = machine.screenEnv(screen);
  if (env === null) {
    throw new ProviderError(
      "MULTI_SCREEN_UNAVAILABLE",
      `The ${machine.kind} provider can start apps on screen 0 only; this session has screen ${screen}.`,
    );
  }
  let app: Launched["app"];
  let args = "";
  let cwd = homeRelativePath(options.cwd);
  let what: string;
  let prelude = "";
  if (request.kind === "path") {
    const path = homeRelativePath(request.path);
    what = `opening ${path}`;
    if (await isFolder(machine, ref, path)) {
      app = "terminal";
      cwd = path;
    } else {
      app = "browser";
      // Chromium opens a plain path argument as a file; the absolute path is taken before HOME changes.
      cwd = "";
      prelude = `file="$(pwd)"/${shellQuote(path)}\n`;
      args = '"$file"';
    }
  } else if (request.kind === "url") {
    app = "browser";
    args = shellQuote(request.url);
    what = `opening ${request.url}`;
  } else {
    app = request.app;
    what = `starting the ${app}`;
  }
  await machine.openScreen(ref, screen);
  const { program, shellArgs } = programs[app];
  if (shellArgs) args = args ? `${shellArgs} ${args}` : shellArgs;
  const browserHome = app === "browser" && options.browserHome ? homeRelativePath(options.browserHome) : "";
  const home = browserHome === "" ? "" : `HOME="$HOME"/${shellQuote(browserHome)} `;
  const script = [
    `${prelude}command -v ${shellQuote(program)} >/dev/null 2>&1 || { echo ${shellQuote(`${program} is not installed on this computer`)} >&2; exit 127; }`,
    `${home}setsid -f ${shellQuote(program)}${args ? ` ${args}` : ""} </dev/null >/dev/null 2>&1`,
  ].join("\n");
  await runToSuccess(machine, ref, script, { cwd, env, what });
  return { app, display: env.DISPLAY ?? null };
}

async function isFolder(machine: CommandMachine, ref: MachineRef, path: string): Promise<boolean> {
  try {
    await machine.listFiles(ref, path);
    return true;
  } catch (error) {
    if (error instanceof ProviderError && error.code === "NOT_A_DIRECTORY") return false;
    throw error;
  }
}

/** Runs a short command on the machine; a non-zero exit fails with what it said. */
async function runToSuccess(
  machine: CommandMachine,
  ref: MachineRef,
  script: string,
  options: { cwd: string; env: Record<string, string>; what: string },
): Promise<void> {
  let exit: Extract<CommandEvent, { type: "exit" }> | undefined;
  let output = "";
  for await (const event of machine.run(ref, {
    command: script,
    cwd: options.cwd,
    env: options.env,
    timeoutMs: LAUNCH_TIMEOUT_MS,
    maxOutputBytes: 16_384,
  })) {
    if (event.type === "exit") exit = event;
    else output = (output + event.data).slice(-1_000);
  }
  if (!exit)
    throw new ProviderError("PROVIDER_FAILURE", `${options.what}: the command ended without an exit status`);
  if (exit.code !== 0) {
    const said = output.trim() || exit.message || `exit status ${exit.code}`;
    throw new ProviderError("APP_LAUNCH_FAILED", `${options.what} failed: ${said}`);
  }
}
