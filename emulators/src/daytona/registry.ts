import { randomBytes, randomUUID } from "node:crypto";
import { MachineMissing, type Machines } from "../machines/index.ts";
import { instanceLabels, labelsOf, recordOf, type SandboxRecord } from "./records.ts";
import { Sandbox } from "./sandbox.ts";

export type NewSandbox = Omit<SandboxRecord, "sandboxId" | "secret" | "name"> & { name?: string };

export interface RegistryOptions {
  instance: string;
  image: string;
  log: (line: string) => void;
}

/** Browsers need more shared memory than Docker's default 64 MB. */
const SHM_BYTES = 256 * 1024 * 1024;

/**
 * The sandboxes of one emulator instance, each a container on the local engine. A lifecycle call
 * does its work before it answers, so the state the SDK reads next is already the container's;
 * meanwhile the sandbox shows Daytona's transitional state (creating, starting, stopping, …).
 */
export class SandboxRegistry {
  private readonly sandboxes = new Map<string, Sandbox>();

  constructor(
    private readonly machines: Machines,
    private readonly options: RegistryOptions,
  ) {}

  /** By id, or by name as Daytona also allows. */
  get(idOrName: string): Sandbox | undefined {
    return this.sandboxes.get(idOrName) ?? this.list().find((sandbox) => sandbox.record.name === idOrName);
  }

  list(): Sandbox[] {
    return [...this.sandboxes.values()];
  }

  /** Takes over the containers an earlier emulator of this instance left. */
  async adopt(): Promise<void> {
    for (const machine of await this.machines.list(instanceLabels(this.options.instance))) {
      const record = recordOf(machine.labels);
      if (!record || this.sandboxes.has(record.sandboxId)) continue;
      const now = await this.machines.inspect(machine.containerId);
      if (now.state === "paused") await this.machines.unpause(machine.containerId);
      const sandbox = new Sandbox(record, machine.containerId, this.machines, {
        state: now.state === "stopped" ? "stopped" : "started",
        ip: now.ip,
        startedAt: now.startedAt,
        createdAt: now.createdAt,
      });
      this.sandboxes.set(record.sandboxId, sandbox);
      this.touch(sandbox);
      this.options.log(`adopted sandbox ${record.sandboxId} (${sandbox.state})`);
    }
  }

  async create(request: NewSandbox): Promise<Sandbox> {
    const sandboxId = randomUUID();
    const record: SandboxRecord = {
      ...request,
      sandboxId,
      name: request.name || sandboxId,
      secret: randomBytes(24).toString("base64url"),
    };
    if (this.get(record.name)) throw new NameTaken(record.name);
    const placeholder = new Sandbox(record, "", this.machines, {
      state: "creating",
      ip: null,
      startedAt: new Date(),
      createdAt: new Date(),
    });
    this.sandboxes.set(sandboxId, placeholder);
    let containerId: string;
    try {
      containerId = await this.machines.create({
        image: this.options.image,
        name: `cubicle-daytona-${this.options.instance}-${sandboxId}`,
        labels: labelsOf(this.options.instance, record),
        env: record.env,
        shmBytes: SHM_BYTES,
      });
    } catch (error) {
      this.sandboxes.delete(sandboxId);
      throw error;
    }
    const now = await this.machines.inspect(containerId).catch(async (error) => {
      this.sandboxes.delete(sandboxId);
      await this.machines.remove(containerId);
      throw error;
    });
    const sandbox = new Sandbox(record, containerId, this.machines, { ...now, state: "started" });
    this.sandboxes.set(sandboxId, sandbox);
    this.touch(sandbox);
    this.options.log(`created sandbox ${sandboxId} (container ${containerId.slice(0, 12)})`);
    return sandbox;
  }

  /** stopped → starting → started: the container boots afresh from its disk. */
  start(sandbox: Sandbox): Promise<void> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      if (sandbox.state === "started") return;
      this.change(sandbox, "starting");
      await this.guard(sandbox, async () => {
        await this.machines.start(sandbox.containerId);
        const now = await this.machines.inspect(sandbox.containerId);
        sandbox.ip = now.ip;
        sandbox.startedAt = now.startedAt;
      });
      this.change(sandbox, "started");
      this.touch(sandbox);
      this.options.log(`started sandbox ${sandbox.id}`);
    });
  }

  /** started → stopping → stopped: every process ends, the disk stays. */
  stop(sandbox: Sandbox): Promise<void> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      if (sandbox.state === "stopped") return;
      clearTimeout(sandbox.idleTimer);
      // stopping before the connections are cut: the preview token dies with the first of them
      this.change(sandbox, "stopping");
      sandbox.dropAll();
      await this.guard(sandbox, () => this.machines.stop(sandbox.containerId));
      this.change(sandbox, "stopped");
      this.options.log(`stopped sandbox ${sandbox.id}`);
      if (sandbox.record.autoDeleteInterval === 0) await this.destroy(sandbox);
    });
  }

  /** destroying → gone: the container is removed, and the sandbox is a 404 from then on. */
  delete(sandbox: Sandbox): Promise<void> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      await this.destroy(sandbox);
    });
  }

  /** Marks activity: an idle sandbox with an autoStopInterval is stopped when it runs out. */
  touch(sandbox: Sandbox): void {
    sandbox.lastActivityAt = new Date();
    clearTimeout(sandbox.idleTimer);
    if (sandbox.state !== "started" || sandbox.autoStopInterval <= 0) return;
    sandbox.idleTimer = setTimeout(
      () => {
        this.options.log(`sandbox ${sandbox.id} was idle for ${sandbox.autoStopInterval} min`);
        this.stop(sandbox).catch((error) => this.options.log(`auto-stop failed: ${String(error)}`));
      },
      Math.min(sandbox.autoStopInterval * 60_000, 2 ** 31 - 1),
    );
    sandbox.idleTimer.unref();
  }

  /** Stops every timer and cuts every connection; the containers stay, to be adopted. */
  release(): void {
    for (const sandbox of this.list()) {
      clearTimeout(sandbox.idleTimer);
      sandbox.dropAll();
    }
    this.sandboxes.clear();
  }

  /** Removes every container of this instance, including ones it never adopted. */
  async removeAll(): Promise<void> {
    const machines = await this.machines.list(instanceLabels(this.options.instance));
    await Promise.all(machines.map((machine) => this.machines.remove(machine.containerId)));
  }

  private async destroy(sandbox: Sandbox): Promise<void> {
    clearTimeout(sandbox.idleTimer);
    this.change(sandbox, "destroying");
    sandbox.dropAll();
    await this.machines.remove(sandbox.containerId);
    this.change(sandbox, "destroyed");
    this.sandboxes.delete(sandbox.id);
    this.options.log(`deleted sandbox ${sandbox.id}`);
  }

  private change(sandbox: Sandbox, state: Sandbox["state"]): void {
    sandbox.state = state;
    sandbox.updatedAt = new Date();
  }

  /** A change to a sandbox deleted meanwhile finds it missing. */
  private ensureKnown(sandbox: Sandbox): void {
    if (this.sandboxes.get(sandbox.id) !== sandbox) throw new MachineMissing(sandbox.containerId);
  }

  /** Runs an engine change; a container found gone means the sandbox is gone. */
  private async guard(sandbox: Sandbox, change: () => Promise<void>): Promise<void> {
    try {
      await change();
    } catch (error) {
      if (error instanceof MachineMissing) {
        sandbox.dropAll();
        this.sandboxes.delete(sandbox.id);
      }
      throw error;
    }
  }
}

/** Daytona's names are unique in an organization. */
export class NameTaken extends Error {
  constructor(name: string) {
    super(`Sandbox with name ${name} already exists`);
    this.name = "NameTaken";
  }
}
