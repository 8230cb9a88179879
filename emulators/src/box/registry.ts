import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type InstanceOptions, InstanceSandboxes, type Machines } from "../machines/index.ts";
import { Box } from "./box.ts";
import { displayUp } from "./desktop.ts";
import { conflict } from "./errors.ts";
import {
  type BoxRecord,
  type BoxSettings,
  labelsOf,
  loadSettings,
  newBoxId,
  newRecord,
  recordOf,
} from "./records.ts";

/**
 * Box's timings, as the least each transition takes: a box is `provisioning` at least this long
 * after a create or resume (and until its display is up), `archiving` this long after a stop, and
 * answers GET (as `deleting`) this long after a delete; its desktop answers "provisioning" this
 * long after the first desktop call of a ready spell (and until x11vnc listens).
 */
export interface BoxTimings {
  provisionMs: number;
  archiveMs: number;
  deleteMs: number;
  desktopProvisioningMs: number;
}

/** Box's own timings, what an emulator keeps unless told others. */
export const TIMINGS: Readonly<BoxTimings> = {
  provisionMs: 3_000,
  archiveMs: 5_000,
  deleteMs: 1_000,
  desktopProvisioningMs: 3_000,
};

/**
 * Box's states in a tenth of its time, for suites about a client rather than Box's clock: every
 * state still shows (a client polling once a second sees each one once) without its seconds of wait.
 */
export const QUICK_TIMINGS: Readonly<BoxTimings> = {
  provisionMs: 300,
  archiveMs: 500,
  deleteMs: 100,
  desktopProvisioningMs: 300,
};

/** A delete as Box reports it: `GET /deletion-operations/{id}` follows it. */
export interface DeletionOperation {
  id: string;
  kind: "box";
  targetId: string;
  reason: "explicit";
  status: "pending" | "processing" | "completed";
  attemptCount: number;
  requestedAt: string;
  completedAt: string | null;
}

export interface Resume {
  noEnv?: boolean;
  ttlSeconds?: number | null;
  type?: BoxSettings["type"];
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Waits until `at` (ms), or until the phase ends. */
async function until(at: number, signal: AbortSignal): Promise<void> {
  const left = at - Date.now();
  if (left > 0) await sleep(left, undefined, { signal });
  signal.throwIfAborted();
}

function archiveAfter(ttlSeconds: number | null): string | null {
  return ttlSeconds === null ? null : new Date(Date.now() + ttlSeconds * 1000).toISOString();
}

/**
 * The boxes of one emulator instance, each a desktop container on the local engine. Calls answer
 * at once with the state Box shows (provisioning, archiving, deleting); the work runs behind, one
 * change of a box at a time, and takes at least Box's time (its timings) before the next state shows.
 */
export class BoxRegistry extends InstanceSandboxes<Box> {
  private readonly operations = new Map<string, DeletionOperation>();

  constructor(
    machines: Machines,
    options: InstanceOptions,
    readonly timings: Readonly<BoxTimings> = TIMINGS,
  ) {
    super(machines, "box", options);
  }

  operation(id: string): DeletionOperation | undefined {
    return this.operations.get(id);
  }

  /** Takes over the containers an earlier emulator of this instance left, with their settings. */
  async adopt(): Promise<void> {
    for await (const { record, containerId, now } of this.unadopted(recordOf, (found) => found.boxId)) {
      if (now.state === "paused") await this.machines.unpause(containerId);
      const settings = await loadSettings(this.machines, containerId, defaultSettings(record));
      const running = now.state !== "stopped";
      const box = new Box(record, settings, containerId, this.machines, {
        state: running ? "provisioning" : "archived",
        createdAt: now.createdAt,
        startedAt: now.startedAt,
      });
      this.sandboxes.set(record.boxId, box);
      this.log(`adopted box ${record.boxId} (${running ? "running" : "archived"})`);
      if (!running) continue;
      // the display is checked (the earlier emulator may have closed before it was up), nothing waited for
      this.provision(box, { since: 0, boot: false });
      this.armTtl(box);
    }
  }

  /** A new box, `provisioning` once its container runs; `ready` a while later. */
  async create(settings: BoxSettings): Promise<Box> {
    const since = Date.now();
    let boxId = newBoxId();
    while (this.sandboxes.has(boxId)) boxId = newBoxId();
    const record = newRecord(boxId);
    const containerId = await this.createContainer(boxId, labelsOf(record), {});
    const box = new Box(record, settings, containerId, this.machines, {
      state: "provisioning",
      createdAt: new Date(since),
      startedAt: null,
    });
    this.sandboxes.set(boxId, box);
    try {
      await box.save();
    } catch (error) {
      this.sandboxes.delete(boxId);
      await this.machines.remove(containerId);
      throw error;
    }
    this.log(`created box ${boxId} (container ${containerId.slice(0, 12)})`);
    this.provision(box, { since, boot: false });
    this.armTtl(box);
    return box;
  }

  /** ready (or provisioning) → archiving → archived: the container stops, its disk stays. */
  stop(box: Box): void {
    if (box.state === "archiving" || box.state === "archived" || box.state === "deleting") return;
    const since = Date.now();
    const generation = box.change("archiving");
    const { signal } = box.phase;
    clearTimeout(box.ttlTimer);
    box.settings.archiveAfter = null;
    this.behind(box, generation, "archive", async () => {
      await this.machines.stop(box.containerId);
      box.ip = null;
      box.settings.snapshotCompletedAt = new Date().toISOString();
      await box.save();
      await until(since + this.timings.archiveMs, signal);
      box.change("archived");
      this.log(`archived box ${box.id}`);
    });
  }

  /** archived → provisioning → ready: the container boots afresh from its disk. */
  resume(box: Box, changes: Resume): void {
    if (box.state !== "archived")
      throw conflict("box_not_archived", `Box ${box.id} is ${box.state}, not archived.`);
    if (box.settings.noEnv && changes.noEnv === false) {
      throw conflict("no_env_one_way", "A no-env box stays no-env: it cannot be resumed with noEnv false.");
    }
    if (changes.noEnv === true) box.settings.noEnv = true;
    if (changes.type) box.settings.type = changes.type;
    if (changes.ttlSeconds !== undefined) box.settings.ttlSeconds = changes.ttlSeconds;
    box.settings.archiveAfter = archiveAfter(box.settings.ttlSeconds);
    box.change("provisioning");
    this.provision(box, { since: Date.now(), boot: true });
    this.armTtl(box);
  }

  /** Renames the box, or restarts its TTL from now (null: no expiry). */
  update(box: Box, changes: { name?: string; ttlSeconds?: number | null }): void {
    if (box.state === "deleting") return;
    if (changes.name !== undefined) box.settings.name = changes.name;
    if (changes.ttlSeconds !== undefined) {
      box.settings.ttlSeconds = changes.ttlSeconds;
      if (box.state === "provisioning" || box.state === "ready") {
        box.settings.archiveAfter = archiveAfter(changes.ttlSeconds);
        this.armTtl(box);
      }
    }
    box.updatedAt = new Date();
    box.save().catch((error: unknown) => this.log(`box ${box.id}: saving its settings failed: ${error}`));
  }

  /** deleting → gone: the container is removed, and the box is a 404 from then on. */
  delete(box: Box): DeletionOperation {
    const known = [...this.operations.values()].find((operation) => operation.targetId === box.id);
    if (known && box.state === "deleting") return known;
    const since = Date.now();
    const operation: DeletionOperation = {
      id: `bdop_${randomBytes(16).toString("hex")}`,
      kind: "box",
      targetId: box.id,
      reason: "explicit",
      status: "pending",
      attemptCount: 0,
      requestedAt: new Date(since).toISOString(),
      completedAt: null,
    };
    this.operations.set(operation.id, operation);
    const generation = box.change("deleting");
    const { signal } = box.phase;
    clearTimeout(box.ttlTimer);
    this.behind(box, generation, "delete", async () => {
      operation.status = "processing";
      operation.attemptCount++;
      await this.machines.remove(box.containerId);
      await until(since + this.timings.deleteMs, signal);
      this.sandboxes.delete(box.id);
      operation.status = "completed";
      operation.completedAt = new Date().toISOString();
      this.log(`deleted box ${box.id}`);
    });
    return operation;
  }

  /** Removes a box at once, behind its users' back. */
  async forget(box: Box): Promise<void> {
    box.change("deleting");
    clearTimeout(box.ttlTimer);
    this.sandboxes.delete(box.id);
    await this.machines.remove(box.containerId);
    this.log(`forgot box ${box.id}`);
  }

  /**
   * Stops every timer, wait and socket and lets the changes under way finish; the containers stay,
   * to be adopted.
   */
  async release(): Promise<void> {
    const boxes = this.list();
    for (const box of boxes) {
      clearTimeout(box.ttlTimer);
      box.phase.abort(new Error("the emulator is closing"));
      box.dropConnections();
    }
    await Promise.all(boxes.map((box) => box.exclusive(async () => undefined)));
    this.sandboxes.clear();
  }

  /**
   * Boots the box (a resume) and brings its display up, then shows it `ready` once its
   * provisioning time has passed since `since`.
   */
  private provision(box: Box, { since, boot }: { since: number; boot: boolean }): void {
    const { signal } = box.phase;
    this.behind(box, box.generation, "provisioning", async () => {
      if (boot) {
        await box.save();
        signal.throwIfAborted();
        await this.machines.start(box.containerId);
      }
      signal.throwIfAborted();
      const now = await this.machines.inspect(box.containerId);
      box.ip = now.ip;
      box.startedAt = now.startedAt;
      signal.throwIfAborted();
      await displayUp(box);
      await until(since + this.timings.provisionMs, signal);
      box.change("ready");
      this.log(`box ${box.id} is ready (${box.ip})`);
    });
  }

  /**
   * Runs a box's change after the ones before it. A change whose box moved on meanwhile (another
   * state asked for, the emulator closing) stops quietly; one that fails leaves the box in `error`.
   */
  private behind(box: Box, generation: number, what: string, change: () => Promise<void>): void {
    box
      .exclusive(async () => {
        if (box.generation !== generation || box.phase.signal.aborted) return;
        await change();
      })
      .catch((error: unknown) => {
        if (box.generation !== generation || box.phase.signal.aborted) return;
        this.log(`box ${box.id}: ${what} failed: ${error instanceof Error ? error.message : error}`);
        box.change("error");
      });
  }

  /** Archives the box when its TTL runs out; Box's TTL is counted from create, resume and PATCH. */
  private armTtl(box: Box): void {
    clearTimeout(box.ttlTimer);
    const at = box.settings.archiveAfter;
    if (!at) return;
    box.ttlTimer = setTimeout(
      () => {
        if (box.settings.archiveAfter !== at || this.get(box.id) !== box) return;
        if (Date.now() < Date.parse(at)) {
          this.armTtl(box);
          return;
        }
        this.log(`box ${box.id}: its TTL ran out`);
        this.stop(box);
      },
      Math.min(Math.max(0, Date.parse(at) - Date.now()), MAX_TIMER_MS),
    );
    box.ttlTimer.unref();
  }
}

/** Settings for a box whose settings file is missing (made by hand, or damaged). */
function defaultSettings(record: BoxRecord): BoxSettings {
  return {
    name: record.boxId,
    type: "default",
    ttlSeconds: null,
    archiveAfter: null,
    noEnv: true,
    env: {},
    snapshotCompletedAt: null,
  };
}
