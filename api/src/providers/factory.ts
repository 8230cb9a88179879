import { join } from "node:path";
import type { ComputerHost } from "@cubicle/db";
import { createSupervisorClient } from "@cubicle/supervisor/client";
import type { ApiEnv } from "../config/env.ts";
import type { ProviderKind, SandboxProvider } from "./contract.ts";
import { createDesktopProvider } from "./desktop/index.ts";
import { createDockerProvider } from "./docker/index.ts";
import { ProviderError } from "./errors.ts";
import { createFakeProvider } from "./fake/index.ts";
import { createRefusingProvider } from "./refusing.ts";

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
export function chooseProvider(sandbox: ApiEnv["sandbox"], computerHost: ComputerHost): ProviderChoice {
  const configured = sandbox.provider;
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
      E2B_API_KEY: sandbox.e2bApiKey,
      DAYTONA_API_KEY: sandbox.daytonaApiKey,
      BOX_API_KEY: sandbox.boxApiKey,
    }[variable];
    if (!key) return { configured, effective: "none", computerHost, reason: `${variable} is not set` };
  }
  return { configured, effective: configured, computerHost, reason: null };
}

export interface ProviderContext {
  env: ApiEnv;
  /** Set when SANDBOX_PROVIDER is docker (secrets.ts requires it then). */
  supervisorToken: string | undefined;
}

/** Builds one backend. Backends that are not built yet refuse every operation, clearly. */
export function buildProvider(
  kind: ProviderKind,
  { env, supervisorToken }: ProviderContext,
): SandboxProvider {
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
    case "fake":
      return createFakeProvider({ nodeEnv: env.nodeEnv });
    case "desktop":
      return createDesktopProvider({
        homesDir: join(env.dataDir, "desktop-homes"),
        allowedRoots: [...env.sandbox.desktopAllowedRoots],
      });
    case "docker":
      if (!supervisorToken) throw new Error("SANDBOX_SUPERVISOR_TOKEN is required by the docker provider");
      return createDockerProvider({
        supervisor: createSupervisorClient({ baseUrl: env.sandbox.supervisorUrl, token: supervisorToken }),
      });
    case "e2b":
    case "daytona":
    case "box":
    case "e2b-emulator":
    case "daytona-emulator":
    case "box-emulator":
      return createRefusingProvider(
        kind,
        () =>
          new ProviderError(
            "NOT_AVAILABLE_YET",
            `The ${kind} provider is not available in this version yet.`,
          ),
      );
  }
}
