import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { ProviderError } from "../contract/index.ts";
import { HOME_FILES_SCRIPT, HOME_SWAP_SCRIPT } from "../kernel/home-scripts.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import type { SandboxShell, ShellResult } from "./shell.ts";

/** Where a vendor's sandbox keeps its user and screens: what differs between vendors' templates. */
export interface SandboxLayout {
  /** The sandbox user's own home; Cubicle's portable home and kit live inside it. */
  userHome: string;
  /** The sandbox user: the owner every member of an imported home gets. */
  user: { uid: number; gid: number };
  /** Screen i is X display :(displayBase + i); screen 0 is the vendor's own display. */
  displayBase: number;
  /** Screen i's view server listens on webPortBase + 2i, its control server on webPortBase + 2i + 1. */
  webPortBase: number;
  /** …each behind an x11vnc on the sandbox's loopback at vncPortBase + 2i (+ 1). */
  vncPortBase: number;
}

const computerImage = createRequire(import.meta.url);
const imageScript = (name: string) =>
  readFileSync(computerImage.resolve(`@cubicle/computer-image/scripts/${name}`), "utf8");
const kitScript = (name: string) => readFileSync(new URL(`./kit/${name}`, import.meta.url), "utf8");

/**
 * What a sandbox gets at each provision (a resumed one may come from an older Cubicle): the
 * Docker computer's own browser wrapper and browser helpers, which run unchanged with another
 * state folder and display numbering, the screen servers and the output-capping runner.
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
export type KitProgram = keyof typeof KIT & string;

const kitDir = (layout: SandboxLayout) => `${layout.userHome}/.cubicle/kit`;
/** Where a kit program lives in sandboxes of this layout. */
export const kitProgram = (layout: SandboxLayout, name: KitProgram) => `${kitDir(layout)}/${name}`;

/** `browsers close` may wait 5 s for windows, 10 s after SIGTERM, then SIGKILL; with margin. */
const BROWSERS_MS = 90_000;

/**
 * One sandbox as Cubicle uses it: a vendor's shell and its layout, with Cubicle's kit installed in
 * the user's home and the portable home beside it.
 */
export class SandboxMachine {
  /** The computer's portable home: what checkpoints carry and file tools may touch. */
  readonly home: string;
  readonly scratchDir: string;
  /** What the kit's shell helpers need to find their state and screens (lib.sh). */
  private readonly kitEnv: Record<string, string>;

  constructor(
    /** The vendor's id of the sandbox. */
    readonly id: string,
    readonly shell: SandboxShell,
    readonly layout: SandboxLayout,
  ) {
    this.home = `${layout.userHome}/cubicle-home`;
    this.scratchDir = `${layout.userHome}/.cubicle/scratch`;
    this.kitEnv = {
      CUBICLE_RUN_DIR: `${layout.userHome}/.cubicle/run`,
      CUBICLE_DISPLAY_BASE: String(layout.displayBase),
      CUBICLE_PORT_BASE: String(layout.webPortBase),
      CUBICLE_VNC_BASE: String(layout.vncPortBase),
    };
  }

  program(name: KitProgram): string {
    return kitProgram(this.layout, name);
  }

  async installKit(): Promise<void> {
    await this.shell.writeTexts(
      Object.entries(KIT).map(([name, text]) => ({ path: kitProgram(this.layout, name), text })),
    );
    // the sweep removes temporary files of uploads whose sandbox was killed before they could clean up
    const setUp = await this.exec(
      `chmod 0755 ${shellQuote(kitDir(this.layout))}/* && mkdir -p ${shellQuote(this.home)} ${shellQuote(this.scratchDir)} && chmod 0700 ${shellQuote(this.scratchDir)} && ${this.homeFilesCommand("sweep", "")} >/dev/null`,
      // the portable home may not exist yet: this makes it
      { timeoutMs: 30_000, cwd: this.layout.userHome },
    );
    if (setUp.exitCode !== 0) throw failure("setting up the sandbox", setUp);
  }

  /** One short helper command in the home (a non-zero exit is a result here, not an error). */
  exec(
    command: string,
    options: { timeoutMs: number; env?: Record<string, string>; cwd?: string },
  ): Promise<ShellResult> {
    return this.shell.exec(command, {
      timeoutMs: options.timeoutMs,
      env: { ...this.kitEnv, HOME: this.home, ...options.env },
      cwd: options.cwd ?? this.home,
    });
  }

  /**
   * The computer image's `browsers settle|close`, as the contract's settleBrowsers and
   * closeBrowsers describe them, on every screen of the sandbox.
   */
  async browsers(verb: "settle" | "close"): Promise<void> {
    const result = await this.exec(`${shellQuote(this.program("browsers"))} ${verb}`, {
      timeoutMs: BROWSERS_MS,
    });
    if (result.exitCode !== 0)
      throw failure(`${verb === "close" ? "closing" : "settling"} the browsers`, result);
  }

  /** `perl home-files.pl <home> <op> <path> [args]` as shell words. */
  homeFilesCommand(op: string, path: string, args: string[] = []): string {
    return ["perl", this.program("home-files.pl"), this.home, op, path, ...args].map(shellQuote).join(" ");
  }

  scratchFile(kind: string): string {
    return `${this.scratchDir}/${kind}-${randomUUID()}`;
  }

  async removeScratch(path: string): Promise<void> {
    await this.exec(`rm -f -- ${shellQuote(path)}`, { timeoutMs: 60_000 }).catch(() => undefined);
  }
}

export function failure(what: string, result: ShellResult): ProviderError {
  const said = (result.stderr || result.stdout).trim().slice(-500) || `exit status ${result.exitCode}`;
  return new ProviderError("PROVIDER_FAILURE", `${what} failed: ${said}`);
}
