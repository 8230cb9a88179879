import type { ProviderKind, SandboxProvider } from "../contract/index.ts";
import type { Backend, BackendVariables, BuildContext } from "./backend.ts";
import { BACKENDS } from "./backends.ts";

export type { Backend, BackendVariable, BackendVariables, BuildContext } from "./backend.ts";
export { BACKEND_VARIABLES, BACKENDS, PROVIDER_KINDS } from "./backends.ts";

/** What choosing and building a backend needs to know (the api's SandboxEnv satisfies it). */
export interface ProviderSettings {
  readonly provider: ProviderKind;
  readonly supervisorUrl: string;
  /** How long a computer may sit unused before Cubicle suspends it (SANDBOX_IDLE_MS). */
  readonly idleMs: number;
  /** The backends' own variables (their keys, addresses, folders). */
  readonly variables: BackendVariables;
}

/** Whether computers are put on a machine by the owner: the api's `isolated` / `this-host` setting. */
export type ComputerHost = "isolated" | "this-host";

const backendOf = (kind: ProviderKind): Backend => BACKENDS[kind];

export interface ProviderChoice {
  configured: ProviderKind;
  effective: ProviderKind;
  computerHost: ComputerHost;
  /** Why the effective provider differs from the configured one, for the log and /health. */
  reason: string | null;
}

/**
 * The one rule for which backend new computers use: SANDBOX_PROVIDER, turned into `desktop`
 * when the owner set the computer host to `this-host`, or into `none` when a remote provider
 * has no key.
 */
export function chooseProvider(settings: ProviderSettings, computerHost: ComputerHost): ProviderChoice {
  const configured = settings.provider;
  if (configured === "docker" && computerHost === "this-host") {
    return {
      configured,
      effective: "desktop",
      computerHost,
      reason: "the computer host setting is this-host",
    };
  }
  const { keyVariable } = backendOf(configured);
  if (keyVariable && !settings.variables[keyVariable]) {
    return { configured, effective: "none", computerHost, reason: `${keyVariable} is not set` };
  }
  return { configured, effective: configured, computerHost, reason: null };
}

/** Whether this configuration runs computers through the Docker supervisor (so needs its token). */
export function usesSupervisor(kind: ProviderKind): boolean {
  return backendOf(kind).usesSupervisor === true;
}

/**
 * Whether this configuration may run computers on this machine (Docker, or the host's own X stack
 * when the owner picks "this host"), so the machine needs those programs installed.
 */
export function runsOnThisMachine(kind: ProviderKind): boolean {
  return backendOf(kind).onThisMachine === true;
}

/**
 * The vendor emulator whose desktops in the local Docker engine this configuration's machines are
 * (so that engine and the emulator's image must be there), or null.
 */
export function emulatedVendor(kind: ProviderKind): "e2b" | "daytona" | "box" | null {
  return backendOf(kind).emulates ?? null;
}

export function isTestKind(kind: ProviderKind): boolean {
  return backendOf(kind).testOnly === true;
}

/** What building a backend takes: the api's settings and where its data lives. */
export interface BuildOptions {
  settings: ProviderSettings;
  dataDir: string;
  nodeEnv: string;
  /** Set when the configuration uses the supervisor (the api's secrets require it then). */
  supervisorToken: string | undefined;
}

/**
 * Builds one backend from its row. Test kinds are refused in production, and every backend's code
 * is loaded only when it is built, so production start-up never imports the test doubles.
 */
export async function buildProvider(kind: ProviderKind, options: BuildOptions): Promise<SandboxProvider> {
  if (isTestKind(kind) && options.nodeEnv === "production") {
    throw new Error(
      `The ${kind} sandbox provider is for tests only and refuses to run with NODE_ENV=production.`,
    );
  }
  const context: BuildContext = {
    variables: options.settings.variables,
    dataDir: options.dataDir,
    idleMs: options.settings.idleMs,
    supervisorUrl: options.settings.supervisorUrl,
    supervisorToken: options.supervisorToken,
  };
  return backendOf(kind).build(context);
}

/**
 * A providerRef is only meaningful to the kind of provider that issued it: the recorded ref when
 * `provider` made it, else null (the machine is replaced, restored from the latest checkpoint).
 */
export function reusableRef(
  provider: Pick<SandboxProvider, "kind">,
  recorded: { kind: string; ref: string | null },
): string | null {
  return recorded.kind === provider.kind ? recorded.ref : null;
}

/** Whether a computer whose machine ran on `recordedKind` moves to `effective` at its next start. */
export function movesOnNextStart(recordedKind: string, effective: ProviderKind): boolean {
  return recordedKind !== effective;
}

/** Whether the effective provider runs no computers at all (SANDBOX_PROVIDER=none, or no key). */
export function computersDisabled(effective: ProviderKind): boolean {
  return effective === "none";
}
