import { randomUUID } from "node:crypto";
import { type MachineRef, ProviderError } from "../contract/index.ts";
import type { BoxClient } from "./client.ts";
import type { Box, BoxInfo, BoxState, DesktopAnswer } from "./wire.ts";

/**
 * How long a box lives unattended by Box's clock. Box counts it from create or resume, not from
 * use, so the adapter pushes it forward while the computer is used; Cubicle's own idle job (which
 * takes a checkpoint first) is what normally stops an unused computer, long before this.
 */
export const BOX_TTL_SECONDS = 7200;

/** The longest a box may take to come up, archive or go. */
const LIFECYCLE_MS = 180_000;
const POLL_MS = 1_000;

const RUNNABLE: ReadonlySet<BoxState> = new Set(["ready", "idle", "running"]);
export const isRunnable = (box: Box) => RUNNABLE.has(box.state);

/**
 * Boxes of one Box account, keyed by box id (the providerRef). Nothing is cached: every use reads
 * the box again, since another api replica, or Box's TTL, may have archived or deleted it.
 */
export class Boxes {
  /** When each box's TTL was last pushed forward. */
  private readonly refreshedAt = new Map<string, number>();

  constructor(
    private readonly client: BoxClient,
    private readonly ttlSeconds: number,
  ) {}

  /**
   * A new box for the computer. `noEnv`: a key given to Cubicle must never put the account's own
   * secrets on a machine a bot drives.
   */
  async create(ref: MachineRef): Promise<Box> {
    const created = await this.client.call<BoxInfo>("creating a box", "POST", "/boxes", {
      body: { name: `cubicle-${ref.homeKey}`, ttlSeconds: this.ttlSeconds, noEnv: true },
      // a retried create must not make a second box
      headers: { "idempotency-key": randomUUID() },
    });
    this.refreshedAt.set(created.box.id, Date.now());
    return created.box;
  }

  /** The box as Box has it now; null once Box no longer has it or is deleting it. */
  async get(boxId: string): Promise<Box | null> {
    const box = await this.read(boxId);
    return box?.state === "deleting" ? this.forgotten(boxId) : box;
  }

  /** The box in any state, null only when Box answers 404. */
  private async read(boxId: string): Promise<Box | null> {
    try {
      return (await this.client.call<BoxInfo>("reading the box's state", "GET", `/boxes/${boxId}`)).box;
    } catch (error) {
      if (error instanceof ProviderError && error.code === "MACHINE_MISSING") return this.forgotten(boxId);
      throw error;
    }
  }

  /** Brings the box to a runnable state: waits out a change under way, resumes an archived one. */
  async bringUp(box: Box): Promise<Box> {
    let current = box;
    if (current.state === "archiving")
      current = await this.waitFor(box.id, "to archive", (b) => b.state !== "archiving");
    if (current.state === "archived") {
      await this.client.call<BoxInfo>("resuming the box", "POST", `/boxes/${box.id}/resume`, {
        // noEnv is one-way at Box; said again so that no resume can drop it
        body: { noEnv: true, ttlSeconds: this.ttlSeconds },
      });
      this.refreshedAt.set(box.id, Date.now());
    }
    return isRunnable(current) ? current : this.waitFor(box.id, "to come up", isRunnable);
  }

  /** Archives the box (its disk stays; processes and desktop tokens do not) and waits until it is. */
  async stop(box: Box): Promise<void> {
    if (box.state !== "archiving") {
      await this.client.call("stopping the box", "POST", `/boxes/${box.id}/stop`, { body: {} });
    }
    await this.waitFor(box.id, "to archive", (b) => b.state === "archived");
  }

  /** Deletes the box and waits until Box answers 404 for it: nothing else means gone. */
  async delete(boxId: string): Promise<void> {
    this.forgotten(boxId);
    await this.client.call("removing the box", "DELETE", `/boxes/${boxId}`, {
      headers: { "x-ascii-confirm-delete": boxId },
    });
    const deadline = Date.now() + LIFECYCLE_MS;
    while ((await this.read(boxId)) !== null) {
      if (Date.now() > deadline) throw late("removing the box");
      await pause();
    }
  }

  /** Whether the box's TTL was last pushed forward long enough ago to do it again. */
  refreshDue(boxId: string): boolean {
    const every = Math.min(60_000, (this.ttlSeconds * 1000) / 4);
    return Date.now() - (this.refreshedAt.get(boxId) ?? 0) > every;
  }

  async refreshTtl(boxId: string): Promise<void> {
    await this.client.call("extending the box's lifetime", "PATCH", `/boxes/${boxId}`, {
      body: { ttlSeconds: this.ttlSeconds },
    });
    this.refreshedAt.set(boxId, Date.now());
  }

  /**
   * The box's noVNC page address with its secret token, asked for afresh each time: the token
   * changes with every state change, so one is never kept. Box answers "provisioning" while it
   * prepares the desktop; that is waited out.
   */
  async desktopUrl(boxId: string): Promise<string> {
    const deadline = Date.now() + LIFECYCLE_MS;
    for (;;) {
      const answer = await this.client.call<DesktopAnswer>(
        "opening the box's desktop",
        "POST",
        `/boxes/${boxId}/desktop`,
        {
          query: { vnc: "1" },
          // with access the token guards, never a public page
          body: { publicAccess: false },
        },
      );
      if (answer.desktopUrl) return answer.desktopUrl;
      if (!answer.provisioning) throw new ProviderError("PROVIDER_FAILURE", "Box gave no desktop address");
      if (Date.now() > deadline) throw late("preparing the box's desktop");
      await pause();
    }
  }

  private async waitFor(boxId: string, what: string, done: (box: Box) => boolean): Promise<Box> {
    const deadline = Date.now() + LIFECYCLE_MS;
    for (;;) {
      const box = await this.get(boxId);
      if (!box) throw new ProviderError("MACHINE_MISSING", `the box went away while waiting for it ${what}`);
      if (done(box)) return box;
      if (box.state === "error")
        throw new ProviderError("PROVIDER_FAILURE", `the box failed while waiting for it ${what}`);
      if (Date.now() > deadline) throw late(`waiting for the box ${what}`);
      await pause();
    }
  }

  private forgotten(boxId: string): null {
    this.refreshedAt.delete(boxId);
    return null;
  }
}

const pause = () => new Promise((resolve) => setTimeout(resolve, POLL_MS));
const late = (what: string) =>
  new ProviderError("PROVIDER_FAILURE", `Box took over ${LIFECYCLE_MS / 1000} s ${what}`);
