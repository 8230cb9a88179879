import { createHash } from "node:crypto";
import type { SandboxProvider } from "../contract/index.ts";

/**
 * One backend as the rest of Cubicle sees it: what SANDBOX_PROVIDER's value selects. Each backend's
 * folder holds its row (`<folder>/backend.ts`); `backends.ts` gathers them in one table, which the
 * selection, the api's configuration and the scripts read. A row is light: the backend's code (and
 * its vendor's SDK) is loaded only when `build` runs.
 */
export interface Backend {
  /** For tests and development only: refused with NODE_ENV=production. */
  readonly testOnly?: boolean;
  /** The variable that holds its credential; without it computers are disabled (`none`). */
  readonly keyVariable?: string;
  /** Its own variables, each read and checked by the api's configuration. */
  readonly variables?: readonly BackendVariable[];
  /** Its computers run on this machine (Docker, or the host's own X): those programs must be here. */
  readonly onThisMachine?: boolean;
  /** It reaches computers through the Docker supervisor, so the api needs SANDBOX_SUPERVISOR_TOKEN. */
  readonly usesSupervisor?: boolean;
  /** The vendor whose loopback emulator it runs, with desktops in the local Docker engine. */
  readonly emulates?: "e2b" | "daytona" | "box";
  build(context: BuildContext): Promise<SandboxProvider>;
}

/**
 * A backend's variable and how it is read: `secret` (also from `<NAME>_FILE`, never logged), `text`,
 * `url` (http or https, trailing slashes dropped) or `paths` (a comma-separated list of absolute paths).
 */
export interface BackendVariable {
  readonly name: string;
  readonly type: "secret" | "text" | "url" | "paths";
}

/** The backends' variables as the api read them: a string, a list of paths, or unset. */
export type BackendVariables = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface BuildContext {
  /** The backends' variables. */
  readonly variables: BackendVariables;
  readonly dataDir: string;
  /** How long a computer may sit unused before Cubicle suspends it (SANDBOX_IDLE_MS). */
  readonly idleMs: number;
  readonly supervisorUrl: string;
  /** Set when the configuration uses the supervisor (the api's secrets require it then). */
  readonly supervisorToken: string | undefined;
}

/** A text variable's value (a list is not one). */
export function textOf(variables: BackendVariables, name: string): string | undefined {
  const value = variables[name];
  return typeof value === "string" ? value : undefined;
}

/** A variable a backend cannot run without. */
export function required(variables: BackendVariables, name: string, kind: string): string {
  const value = textOf(variables, name);
  if (!value) throw new Error(`${name} is required by the ${kind} provider`);
  return value;
}

/**
 * How long a vendor keeps an unused machine before pausing it by itself: past Cubicle's own idle
 * window, so Cubicle's idle job, which takes a checkpoint first, is what normally suspends it.
 */
export function vendorLifetimeMs(idleMs: number): number {
  return idleMs + 5 * 60_000;
}

/** The name an emulator gives the machines it makes for the api whose data lives in `dataDir`. */
export function emulatorInstance(dataDir: string): string {
  return `cubicle-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`;
}
