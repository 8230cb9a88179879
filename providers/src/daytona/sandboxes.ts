import {
  Daytona,
  DaytonaAuthenticationError,
  DaytonaError,
  DaytonaNotFoundError,
  DaytonaProcessExecutionTimeoutError,
  DaytonaRateLimitError,
  type Sandbox,
} from "@daytonaio/sdk";
import {
  type MachineRef,
  machineStopped,
  ProviderError,
  SCREEN_HEIGHT,
  SCREEN_WIDTH,
} from "../contract/index.ts";
import { vendorCaller } from "../remote/vendor-call.ts";
import { type DaytonaNetwork, heldSettings } from "./egress.ts";

/** How the SDK reaches Daytona: its own knobs, nothing else (an emulator is reached the same way). */
export interface DaytonaConnection {
  apiKey: string;
  /** DAYTONA_API_URL: the control plane, e.g. https://app.daytona.io/api. */
  apiUrl?: string | undefined;
  /** DAYTONA_TARGET: the region sandboxes are made in. */
  target?: string | undefined;
}

/** Seconds the SDK may take for a lifecycle change (its own default is 60). */
const LIFECYCLE_SECONDS = 180;

/**
 * Sandboxes of one Daytona organisation, keyed by the sandbox id (the providerRef). The SDK's
 * objects are kept only as a cache of what the last read said; every use reads the state again,
 * since another api replica (or Daytona itself) may have stopped or deleted the sandbox.
 */
export class Sandboxes {
  private client: Daytona | null = null;
  private readonly known = new Map<string, Sandbox>();
  /** When each sandbox's activity was last reported. */
  private readonly reportedAt = new Map<string, number>();

  constructor(readonly connection: DaytonaConnection) {}

  /** Made at first use: the SDK opens its event socket to Daytona as soon as it is constructed. */
  private get daytona(): Daytona {
    const { apiKey, apiUrl, target } = this.connection;
    this.client ??= new Daytona({ apiKey, ...(apiUrl ? { apiUrl } : {}), ...(target ? { target } : {}) });
    return this.client;
  }

  /** A new sandbox labelled with the computer it serves, started. */
  async create(ref: MachineRef): Promise<Sandbox> {
    const sandbox = await vendorCall("creating a sandbox", () =>
      this.daytona.create(
        {
          labels: {
            cubicleComputerId: ref.computerId,
            cubicleWorkspaceId: ref.workspaceId,
            cubicleHomeKey: ref.homeKey,
          },
          // the computer-use display's size
          envVars: { VNC_RESOLUTION: `${SCREEN_WIDTH}x${SCREEN_HEIGHT}` },
          // Cubicle's own idle job (which takes a checkpoint first) decides when a computer stops,
          // and only Cubicle deletes one
          autoStopInterval: 0,
          autoDeleteInterval: -1,
          // every port request needs the preview token, which only the screen proxy holds
          public: false,
        },
        { timeout: LIFECYCLE_SECONDS },
      ),
    );
    this.known.set(sandbox.id, sandbox);
    return sandbox;
  }

  /** The sandbox as Daytona has it now; null when it no longer exists. */
  async get(sandboxId: string): Promise<Sandbox | null> {
    const cached = this.known.get(sandboxId);
    let sandbox: Sandbox;
    try {
      if (cached) {
        await cached.refreshData();
        sandbox = cached;
      } else {
        sandbox = await this.daytona.get(sandboxId);
      }
    } catch (error) {
      if (error instanceof DaytonaNotFoundError) return this.forgotten(sandboxId);
      throw asProviderError("reading the sandbox's state", error);
    }
    if (sandbox.state === "destroyed" || sandbox.state === "destroying") return this.forgotten(sandboxId);
    this.known.set(sandboxId, sandbox);
    return sandbox;
  }

  /**
   * Brings the sandbox to `started`: Daytona does not start a stopped or archived one by itself
   * (its toolbox answers "Is the Sandbox started?"), and one changing state is waited for.
   */
  async start(sandbox: Sandbox): Promise<void> {
    if (sandbox.state === "started") return;
    if (sandbox.state === "starting" || sandbox.state === "creating" || sandbox.state === "restoring") {
      await vendorCall("waiting for the sandbox to start", () => sandbox.waitUntilStarted(LIFECYCLE_SECONDS));
      return;
    }
    if (sandbox.state === "stopping" || sandbox.state === "archiving") {
      await vendorCall("waiting for the sandbox to stop", () => sandbox.waitUntilStopped(LIFECYCLE_SECONDS));
    }
    await vendorCall("starting the sandbox", () => sandbox.start(LIFECYCLE_SECONDS));
  }

  /** Replaces the sandbox's network settings; Daytona applies them before it answers. */
  async setNetwork(sandbox: Sandbox, settings: DaytonaNetwork): Promise<void> {
    await vendorCall("changing the sandbox's network settings", () =>
      sandbox.updateNetworkSettings(settings),
    );
  }

  /**
   * Gives a sandbox that just started its own network settings again: Daytona's runner puts them
   * on the sandbox when it is made and when they change, not at a start (whose address may differ).
   */
  async restoreNetwork(sandbox: Sandbox): Promise<void> {
    const held = heldSettings(sandbox);
    if (held) await this.setNetwork(sandbox, held);
  }

  async stop(sandbox: Sandbox): Promise<void> {
    await vendorCall("stopping the sandbox", () => sandbox.stop(LIFECYCLE_SECONDS));
  }

  async delete(sandbox: Sandbox): Promise<void> {
    this.forgotten(sandbox.id);
    await vendorCall("removing the sandbox", () => sandbox.delete(LIFECYCLE_SECONDS));
  }

  /** Whether the sandbox's activity was last reported over a minute ago (or never here). */
  activityDue(sandboxId: string): boolean {
    return Date.now() - (this.reportedAt.get(sandboxId) ?? 0) > 60_000;
  }

  async reportActivity(sandbox: Sandbox): Promise<void> {
    await vendorCall("reporting the sandbox's activity", () => sandbox.refreshActivity());
    this.reportedAt.set(sandbox.id, Date.now());
  }

  private forgotten(sandboxId: string): null {
    this.known.delete(sandboxId);
    this.reportedAt.delete(sandboxId);
    return null;
  }
}

export const missingMachine = (sandboxId: string | null) =>
  new ProviderError("MACHINE_MISSING", `no Daytona sandbox ${sandboxId ?? "(none)"} for this home`);

/**
 * One call to Daytona with its failures in Cubicle's words: a refused key is PROVIDER_AUTH_FAILED
 * (the operator's to fix), a missing sandbox MACHINE_MISSING, a stopped one MACHINE_STOPPED,
 * anything else PROVIDER_FAILURE with what Daytona said. The SDK's messages name no key or token.
 */
export const vendorCall = vendorCaller(asProviderError);

export function asProviderError(what: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  if (error instanceof DaytonaAuthenticationError) {
    return new ProviderError(
      "PROVIDER_AUTH_FAILED",
      `Daytona refused the API key while ${what}: check DAYTONA_API_KEY`,
      { cause: error },
    );
  }
  const said = error instanceof Error ? error.message : String(error);
  // organisations on Daytona's lower tiers have their egress fixed by Daytona
  if (said.includes("Network access is restricted")) {
    return new ProviderError(
      "EGRESS_UNSUPPORTED",
      `Daytona refused to change the sandbox's network settings while ${what}: ${said} (Daytona fixes egress for organisations on its lower tiers; a higher tier lifts it)`,
      { cause: error },
    );
  }
  // Daytona's proxy refuses toolbox calls to a sandbox that is not running in these words
  if (said.includes("Is the Sandbox started?")) return machineStopped();
  if (error instanceof DaytonaProcessExecutionTimeoutError) {
    return new ProviderError("PROVIDER_FAILURE", `Daytona timed out while ${what}`, { cause: error });
  }
  const busy = error instanceof DaytonaRateLimitError ? " (rate limited; try again shortly)" : "";
  const kind = error instanceof DaytonaError ? "" : " (unexpected)";
  return new ProviderError("PROVIDER_FAILURE", `Daytona failed while ${what}${busy}${kind}: ${said}`, {
    cause: error,
  });
}
