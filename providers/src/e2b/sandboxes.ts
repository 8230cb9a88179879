import { AuthenticationError, NotFoundError, RateLimitError, Sandbox } from "@e2b/desktop";
import { type MachineRef, ProviderError, SCREEN_HEIGHT, SCREEN_WIDTH } from "../contract/index.ts";
import { ArchiveRefused } from "../kernel/home-archive.ts";
import { vendorCaller } from "../remote/vendor-call.ts";
import type { E2bNetwork } from "./egress.ts";

/** How the SDK reaches E2B: its own knobs, nothing else (an emulator is reached the same way). */
export interface E2bConnection {
  apiKey: string;
  /** E2B_API_URL: the control plane. */
  apiUrl?: string | undefined;
  /** E2B_SANDBOX_URL: one address for every sandbox's envd (and, here, its ports). */
  sandboxUrl?: string | undefined;
  /** E2B_DOMAIN: where sandboxes' hosts live (`<port>-<sandbox id>.<domain>`). */
  domain?: string | undefined;
}

/** E2B's desktop template: the image every computer starts from. */
export const E2B_TEMPLATE = "desktop";

const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Sandboxes of one E2B account, keyed by the sandbox id (the providerRef). The SDK's sandbox
 * objects are kept only while their sandbox runs: a paused one is reached again through
 * `connect`, which is also how E2B resumes it.
 */
export class Sandboxes {
  private readonly live = new Map<string, Sandbox>();
  /** When each sandbox's vendor timeout was last pushed forward. */
  private readonly armedAt = new Map<string, number>();

  constructor(
    readonly connection: E2bConnection,
    /** How long E2B keeps a sandbox unused before it pauses it; pushed forward while in use. */
    private readonly lifetimeMs: number,
  ) {}

  private get options() {
    const { apiKey, apiUrl, sandboxUrl, domain } = this.connection;
    return {
      apiKey,
      ...(apiUrl ? { apiUrl } : {}),
      ...(sandboxUrl ? { sandboxUrl } : {}),
      ...(domain ? { domain } : {}),
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
    };
  }

  /** One page of one sandbox: the cheapest call that needs the key. */
  async verifyAccess(): Promise<void> {
    await vendorCall("listing sandboxes", () => Sandbox.list({ ...this.options, limit: 1 }).nextItems());
  }

  /** A new desktop sandbox labelled with the computer it serves, its outbound settings `network` from the start. */
  async create(ref: MachineRef, network: E2bNetwork): Promise<Sandbox> {
    const sandbox = await vendorCall("creating a sandbox", () =>
      Sandbox.create(E2B_TEMPLATE, {
        ...this.options,
        resolution: [SCREEN_WIDTH, SCREEN_HEIGHT],
        timeoutMs: this.lifetimeMs,
        metadata: {
          cubicleComputerId: ref.computerId,
          cubicleWorkspaceId: ref.workspaceId,
          cubicleHomeKey: ref.homeKey,
        },
        // Cubicle's own idle job suspends computers; E2B's timeout only backs it up, and pausing
        // keeps the sandbox's disk and memory, as a stop must
        lifecycle: { onTimeout: "pause" },
        // without public traffic every port request needs the traffic token, which only the
        // screen proxy holds
        network: {
          allowPublicTraffic: false,
          ...(network.allowOut.length > 0 ? { allowOut: network.allowOut } : {}),
          ...(network.denyOut.length > 0 ? { denyOut: network.denyOut } : {}),
        },
      }),
    );
    this.remember(sandbox);
    return sandbox;
  }

  /** Reconnects (resuming a paused sandbox); null when E2B no longer has it. */
  async connect(sandboxId: string): Promise<Sandbox | null> {
    try {
      const sandbox = await vendorCall("reconnecting to the sandbox", () =>
        Sandbox.connect(sandboxId, { ...this.options, timeoutMs: this.lifetimeMs }),
      );
      this.remember(sandbox);
      return sandbox;
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  }

  /** running, paused, or missing (never made, killed, or deleted by the vendor). */
  async state(sandboxId: string): Promise<"running" | "paused" | "missing"> {
    try {
      const info = await vendorCall("reading the sandbox's state", () =>
        Sandbox.getInfo(sandboxId, this.options),
      );
      if (info.state !== "running") this.forget(sandboxId);
      return info.state === "running" ? "running" : "paused";
    } catch (error) {
      if (isMissing(error)) {
        this.forget(sandboxId);
        return "missing";
      }
      throw error;
    }
  }

  /**
   * The SDK object of a sandbox just read as running: the one kept from its create or last
   * connect, else one connected anew; MACHINE_MISSING when E2B no longer has it.
   */
  async attach(sandboxId: string): Promise<Sandbox> {
    const sandbox = this.live.get(sandboxId) ?? (await this.connect(sandboxId));
    if (!sandbox) throw missingMachine(sandboxId);
    return sandbox;
  }

  /** Whether the sandbox's timeout was last pushed forward over a minute ago (or never here). */
  keepAliveDue(sandboxId: string): boolean {
    return Date.now() - (this.armedAt.get(sandboxId) ?? 0) > 60_000;
  }

  async keepAlive(sandboxId: string): Promise<void> {
    await vendorCall("extending the sandbox's timeout", () =>
      Sandbox.setTimeout(sandboxId, this.lifetimeMs, this.options),
    );
    this.armedAt.set(sandboxId, Date.now());
  }

  /**
   * Replaces a running sandbox's outbound settings; in force when E2B answers. E2B refuses (409)
   * to change a paused sandbox's.
   */
  async updateNetwork(sandboxId: string, network: E2bNetwork): Promise<void> {
    await vendorCall("changing the sandbox's network settings", () =>
      Sandbox.updateNetwork(sandboxId, network, this.options),
    );
  }

  /** Pauses the sandbox; one already paused is fine (E2B answers 409, the SDK false). */
  async pause(sandboxId: string): Promise<void> {
    this.forget(sandboxId);
    await vendorCall("pausing the sandbox", () => Sandbox.pause(sandboxId, this.options));
  }

  async kill(sandboxId: string): Promise<void> {
    this.forget(sandboxId);
    await vendorCall("removing the sandbox", () => Sandbox.kill(sandboxId, this.options));
  }

  private remember(sandbox: Sandbox) {
    this.live.set(sandbox.sandboxId, sandbox);
    this.armedAt.set(sandbox.sandboxId, Date.now());
  }

  private forget(sandboxId: string) {
    this.live.delete(sandboxId);
    this.armedAt.delete(sandboxId);
  }
}

export const missingMachine = (sandboxId: string | null) =>
  new ProviderError("MACHINE_MISSING", `no E2B sandbox ${sandboxId ?? "(none)"} for this home`);

function isMissing(error: unknown): boolean {
  return (
    error instanceof NotFoundError || (error instanceof ProviderError && error.code === "MACHINE_MISSING")
  );
}

/**
 * One call to E2B with its failures in Cubicle's words: a refused key is PROVIDER_AUTH_FAILED
 * (the operator's to fix), a missing sandbox MACHINE_MISSING, anything else PROVIDER_FAILURE with
 * what E2B said. Nothing here can hold a secret: the SDK's messages name no key or token.
 */
export const vendorCall = vendorCaller(asProviderError);

export function asProviderError(what: string, error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  if (error instanceof ArchiveRefused)
    return new ProviderError("PROVIDER_FAILURE", error.message, { cause: error });
  if (error instanceof AuthenticationError) {
    return new ProviderError(
      "PROVIDER_AUTH_FAILED",
      `E2B refused the API key while ${what}: check E2B_API_KEY`,
      { cause: error },
    );
  }
  if (error instanceof NotFoundError) {
    return new ProviderError("MACHINE_MISSING", `E2B has no such sandbox (${what})`, { cause: error });
  }
  const said = error instanceof Error ? error.message : String(error);
  const busy = error instanceof RateLimitError ? " (rate limited; try again shortly)" : "";
  return new ProviderError("PROVIDER_FAILURE", `E2B failed while ${what}${busy}: ${said}`, { cause: error });
}
