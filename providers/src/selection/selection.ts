import { createHash } from "node:crypto";
import { join } from "node:path";
import { createBoxProvider } from "../box/index.ts";
import {
  ProviderError,
  type ProviderKind,
  type SandboxProvider,
  TEST_PROVIDER_KINDS,
} from "../contract/index.ts";
import { createDaytonaProvider } from "../daytona/index.ts";
import { createDesktopProvider } from "../desktop/index.ts";
import { createDockerProvider } from "../docker/index.ts";
import { createSupervisorClient } from "../docker/supervisor/client.ts";
import { createE2bProvider } from "../e2b/index.ts";
import { createRefusingProvider } from "../none/index.ts";

/** What choosing and building a backend needs to know (the api's SandboxEnv satisfies it). */
export interface ProviderSettings {
  readonly provider: ProviderKind;
  readonly supervisorUrl: string;
  readonly e2bApiKey: string | undefined;
  /** The E2B SDK's own redirect settings (E2B_API_URL, E2B_SANDBOX_URL, E2B_DOMAIN). */
  readonly e2bApiUrl: string | undefined;
  readonly e2bSandboxUrl: string | undefined;
  readonly e2bDomain: string | undefined;
  /** How long a computer may sit unused before Cubicle suspends it (SANDBOX_IDLE_MS). */
  readonly idleMs: number;
  readonly daytonaApiKey: string | undefined;
  /** The Daytona SDK's own settings (DAYTONA_API_URL, DAYTONA_TARGET). */
  readonly daytonaApiUrl: string | undefined;
  readonly daytonaTarget: string | undefined;
  readonly boxApiKey: string | undefined;
  /** Box's API address (BOX_API_URL); unset, Box's own. */
  readonly boxApiUrl: string | undefined;
  /** Extra host folders a `desktop` computer may touch besides its home. */
  readonly desktopAllowedRoots: readonly string[];
}

/** Whether computers are put on a machine by the owner: the api's `isolated` / `this-host` setting. */
export type ComputerHost = "isolated" | "this-host";

/** Remote providers and the variable that holds their key; without it they run as `none`. */
const REMOTE_KEYS = {
  e2b: "E2B_API_KEY",
  daytona: "DAYTONA_API_KEY",
  box: "BOX_API_KEY",
} as const satisfies Partial<Record<ProviderKind, string>>;

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
  if (configured in REMOTE_KEYS) {
    const variable = REMOTE_KEYS[configured as keyof typeof REMOTE_KEYS];
    const key = {
      E2B_API_KEY: settings.e2bApiKey,
      DAYTONA_API_KEY: settings.daytonaApiKey,
      BOX_API_KEY: settings.boxApiKey,
    }[variable];
    if (!key) return { configured, effective: "none", computerHost, reason: `${variable} is not set` };
  }
  return { configured, effective: configured, computerHost, reason: null };
}

/** Whether this configuration runs computers through the Docker supervisor (so needs its token). */
export function usesSupervisor(kind: ProviderKind): boolean {
  return kind === "docker";
}

/**
 * Whether this configuration may run computers on this machine (Docker, or the host's own X stack
 * when the owner picks "this host"), so the machine needs those programs installed.
 */
export function runsOnThisMachine(kind: ProviderKind): boolean {
  return kind === "docker" || kind === "desktop" || emulatedVendor(kind) !== null;
}

/**
 * The vendor emulator whose desktops in the local Docker engine this configuration's machines are
 * (so that engine and the emulator's image must be there), or null.
 */
export function emulatedVendor(kind: ProviderKind): "e2b" | "daytona" | "box" | null {
  if (kind === "e2b-emulator") return "e2b";
  if (kind === "daytona-emulator") return "daytona";
  if (kind === "box-emulator") return "box";
  return null;
}

export function isTestKind(kind: ProviderKind): boolean {
  return (TEST_PROVIDER_KINDS as readonly ProviderKind[]).includes(kind);
}

export interface BuildContext {
  settings: ProviderSettings;
  dataDir: string;
  nodeEnv: string;
  /** Set when the configuration uses the supervisor (the api's secrets require it then). */
  supervisorToken: string | undefined;
}

/**
 * Builds one backend. Test kinds load their doubles from providers/testing only when asked for,
 * so production start-up never imports them.
 */
export async function buildProvider(kind: ProviderKind, context: BuildContext): Promise<SandboxProvider> {
  if (isTestKind(kind) && context.nodeEnv === "production") {
    throw new Error(
      `The ${kind} sandbox provider is for tests only and refuses to run with NODE_ENV=production.`,
    );
  }
  switch (kind) {
    case "none":
      return createRefusingProvider(
        kind,
        () =>
          new ProviderError(
            "SANDBOX_DISABLED",
            "Computers are disabled: SANDBOX_PROVIDER is none, or a remote provider has no API key.",
          ),
      );
    case "fake": {
      const { createFakeProvider } = await import("../../testing/fake/index.ts");
      return createFakeProvider();
    }
    case "desktop":
      return createDesktopProvider({
        homesDir: join(context.dataDir, "desktop-homes"),
        allowedRoots: [...context.settings.desktopAllowedRoots],
      });
    case "docker":
      if (!context.supervisorToken)
        throw new Error("SANDBOX_SUPERVISOR_TOKEN is required by the docker provider");
      return createDockerProvider({
        supervisor: createSupervisorClient({
          baseUrl: context.settings.supervisorUrl,
          token: context.supervisorToken,
        }),
      });
    case "e2b": {
      const { e2bApiKey, e2bApiUrl, e2bSandboxUrl, e2bDomain } = context.settings;
      if (!e2bApiKey) throw new Error("E2B_API_KEY is required by the e2b provider");
      return createE2bProvider({
        connection: { apiKey: e2bApiKey, apiUrl: e2bApiUrl, sandboxUrl: e2bSandboxUrl, domain: e2bDomain },
        sandboxLifetimeMs: vendorLifetimeMs(context.settings.idleMs),
      });
    }
    case "e2b-emulator": {
      // the real e2b adapter, pointed by the SDK's own settings at an E2B emulator on loopback whose
      // sandboxes are desktops in the local Docker engine; named after DATA_DIR, so a restarted api
      // finds its sandboxes again
      const { startE2bEmulator } = await import("@cubicle/emulators/e2b");
      const emulator = await startE2bEmulator({ instance: emulatorInstance(context.dataDir) });
      const provider = createE2bProvider({
        kind,
        connection: {
          apiKey: emulator.apiKey,
          apiUrl: emulator.apiUrl,
          sandboxUrl: emulator.sandboxUrl,
          domain: emulator.domain,
        },
        sandboxLifetimeMs: vendorLifetimeMs(context.settings.idleMs),
      });
      return Object.assign(provider, { shutdown: () => emulator.close() });
    }
    case "daytona": {
      const { daytonaApiKey, daytonaApiUrl, daytonaTarget } = context.settings;
      if (!daytonaApiKey) throw new Error("DAYTONA_API_KEY is required by the daytona provider");
      return createDaytonaProvider({
        connection: { apiKey: daytonaApiKey, apiUrl: daytonaApiUrl, target: daytonaTarget },
      });
    }
    case "daytona-emulator": {
      // the real daytona adapter pointed at a Daytona emulator on loopback, as for e2b-emulator
      const { startDaytonaEmulator } = await import("@cubicle/emulators/daytona");
      const emulator = await startDaytonaEmulator({ instance: emulatorInstance(context.dataDir) });
      const provider = createDaytonaProvider({
        kind,
        connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl, target: emulator.target },
      });
      return Object.assign(provider, { shutdown: () => emulator.close() });
    }
    case "box": {
      const { boxApiKey, boxApiUrl } = context.settings;
      if (!boxApiKey) throw new Error("BOX_API_KEY is required by the box provider");
      return createBoxProvider({ connection: { apiKey: boxApiKey, apiUrl: boxApiUrl } });
    }
    case "box-emulator": {
      // the real box adapter pointed at a Box emulator on loopback, as for e2b-emulator
      const { startBoxEmulator } = await import("@cubicle/emulators/box");
      const emulator = await startBoxEmulator({ instance: emulatorInstance(context.dataDir) });
      const provider = createBoxProvider({
        kind,
        connection: { apiKey: emulator.apiKey, apiUrl: emulator.apiUrl },
      });
      return Object.assign(provider, { shutdown: () => emulator.close() });
    }
  }
}

/**
 * How long a vendor keeps an unused machine before pausing it by itself: past Cubicle's own idle
 * window, so Cubicle's idle job, which takes a checkpoint first, is what normally suspends it.
 */
function vendorLifetimeMs(idleMs: number): number {
  return idleMs + 5 * 60_000;
}

/** The name an emulator gives the machines it makes for the api whose data lives in `dataDir`. */
function emulatorInstance(dataDir: string): string {
  return `cubicle-${createHash("sha256").update(dataDir).digest("hex").slice(0, 12)}`;
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
