import { HttpProblem } from "../http/problem.ts";
import type { CommandEvent, ProviderKind } from "../providers/contract.ts";
import { ProviderError } from "../providers/errors.ts";
import type { ToolSession } from "./session.ts";

/** Apps a session can start on its screen, as the Docker computer image names them. */
export const APPS = {
  browser: { program: "/opt/cubicle/browser", title: "Chromium" },
  terminal: { program: "xterm", title: "xterm" },
} as const;
export type AppName = keyof typeof APPS;

const LAUNCH_TIMEOUT_MS = 15_000;

/** One shell word holding exactly `value`. */
export const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * The X display of screen `index` as commands on the machine should see it: in the Docker computer
 * screen i is display `:i+1` (computer-image/rootfs/opt/cubicle/lib.sh), as on the fake. The
 * desktop provider gives commands its screen 0's display itself and has no fixed numbering for
 * the others: null means the screen cannot be targeted.
 */
export function displayVariables(kind: ProviderKind, index: number): Record<string, string> | null {
  if (kind === "docker" || kind === "fake") return { DISPLAY: `:${index + 1}` };
  return index === 0 ? {} : null;
}

/** As displayVariables, refusing a screen the provider cannot start apps on. */
export function displayEnv(tool: ToolSession, index: number): Record<string, string> {
  const kind = tool.machine.provider.kind;
  const env = displayVariables(kind, index);
  if (env) return env;
  throw new HttpProblem(
    409,
    "MULTI_SCREEN_UNAVAILABLE",
    `The ${kind} provider can start apps on screen 0 only; this session has screen ${index}.`,
  );
}

/**
 * The shell text that starts `program` detached from the command (its own session, no output
 * pipes held open), so the command returns at once and the app outlives it. `shellArgs` is shell
 * text (quote it). On a Team Computer
 * the browser gets the bot's own profile under `bots/<bot id>/`: Chromium runs one instance per
 * profile, and a shared one would open every bot's window on the screen that started it first.
 */
export function launchScript(tool: ToolSession, app: AppName, shellArgs = ""): string {
  const { program } = APPS[app];
  const home =
    app === "browser" && tool.paths.start !== "" ? `HOME="$HOME"/${shellQuote(tool.paths.start)} ` : "";
  return [
    `command -v ${shellQuote(program)} >/dev/null 2>&1 || { echo ${shellQuote(`${program} is not installed on this computer`)} >&2; exit 127; }`,
    `${home}setsid -f ${shellQuote(program)}${shellArgs ? ` ${shellArgs}` : ""} </dev/null >/dev/null 2>&1`,
  ].join("\n");
}

/** Runs a short command on the machine; a non-zero exit fails with what it said. */
export async function runLaunch(
  tool: ToolSession,
  script: string,
  options: { cwd?: string; env: Record<string, string>; what: string },
): Promise<void> {
  const { provider, ref } = tool.machine;
  let exit: Extract<CommandEvent, { type: "exit" }> | undefined;
  let output = "";
  for await (const event of provider.run(ref, {
    command: script,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
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
    throw new HttpProblem(502, "APP_LAUNCH_FAILED", `${options.what} failed: ${said}`);
  }
}
