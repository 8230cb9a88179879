import { must, succeeded } from "./calls.ts";
import type { Cubicle, Schemas } from "./cubicle.ts";

export type ScreenCapability = Schemas["ScreenCapability"];
export type ControlLeaseRecord = Schemas["ControlLease"];

export interface ScreenRef {
  workspaceId: string;
  computerId: string;
  /** 0 unless the computer has more screens. */
  screen: number;
}

export interface CapabilityOptions {
  /** `view` (the default) or `control`, which needs the caller to hold the screen's control lease. */
  mode?: "view" | "control";
  /**
   * The web origin of the page that will open it (one of the workspace's embed origins): the
   * proxy then opens it only for that origin's pages.
   */
  origin?: string;
}

const SCREEN = "/v1/workspaces/{workspaceId}/computers/{computerId}/screens/{index}";

const pathOf = ({ workspaceId, computerId, screen }: ScreenRef) => ({
  workspaceId,
  computerId,
  index: String(screen),
});

/**
 * A single-use capability to open one screen through the screen proxy, valid for at most a
 * minute: open a WebSocket to `url` offering the subprotocols `protocol` and `token` (never in a
 * URL), or hand it to `<cubicle-screen>` (@cubicle/viewer) in the page it is for.
 */
export function mintScreenCapability(
  cubicle: Cubicle,
  ref: ScreenRef,
  { mode = "view", origin }: CapabilityOptions = {},
): Promise<ScreenCapability> {
  return must(
    cubicle.api.POST(`${SCREEN}/capabilities`, {
      params: { path: pathOf(ref) },
      body: { mode, ...(origin === undefined ? {} : { origin }) },
    }),
  );
}

/**
 * A screen's control lease held by this client's caller (a person, or the API key of an app that
 * embeds the screen and lets its page drive it). It ends unless renewed; `release()` ends control
 * at once, and the proxy closes the page's control socket within a second.
 */
export class ControlLease {
  private constructor(
    private readonly cubicle: Cubicle,
    readonly ref: ScreenRef,
    private record: ControlLeaseRecord,
  ) {}

  /** Takes control of the screen; a screen someone else controls throws `CONTROL_HELD` (409). */
  static async take(cubicle: Cubicle, ref: ScreenRef): Promise<ControlLease> {
    const record = await must(cubicle.api.POST(`${SCREEN}/control`, { params: { path: pathOf(ref) } }));
    return new ControlLease(cubicle, ref, record);
  }

  get id(): string {
    return this.record.leaseId;
  }

  get expiresAt(): Date {
    return new Date(this.record.expiresAt);
  }

  /** A control capability under this lease, for the page of `origin` (or any allowed one, if omitted). */
  capability(options: Omit<CapabilityOptions, "mode"> = {}): Promise<ScreenCapability> {
    return mintScreenCapability(this.cubicle, this.ref, { ...options, mode: "control" });
  }

  async renew(): Promise<Date> {
    this.record = await must(
      this.cubicle.api.POST(`${SCREEN}/control/{leaseId}/renew`, {
        params: { path: { ...pathOf(this.ref), leaseId: this.id } },
      }),
    );
    return this.expiresAt;
  }

  async release(): Promise<void> {
    await succeeded(
      this.cubicle.api.DELETE(`${SCREEN}/control/{leaseId}`, {
        params: { path: { ...pathOf(this.ref), leaseId: this.id } },
      }),
    );
  }
}
