import { randomBytes, randomUUID } from "node:crypto";
import { type InstanceOptions, InstanceSandboxes, MachineMissing, type Machines } from "../machines/index.ts";
import type { NetworkEnforcer } from "./enforcer.ts";
import type { NetworkSettings } from "./network.ts";
import { labelsOf, loadNetwork, recordOf, type SandboxRecord, saveNetwork } from "./records.ts";
import { Sandbox } from "./sandbox.ts";

export type NewSandbox = Omit<SandboxRecord, "sandboxId" | "secret" | "name"> & {
  name?: string;
  network: NetworkSettings;
};

/**
 * The sandboxes of one emulator instance, each a container on the local engine. A lifecycle call
 * does its work before it answers, so the state the SDK reads next is already the container's;
 * meanwhile the sandbox shows Daytona's transitional state (creating, starting, stopping, …).
 */
export class SandboxRegistry extends InstanceSandboxes<Sandbox> {
  constructor(
    machines: Machines,
    options: InstanceOptions,
    private readonly enforcer: NetworkEnforcer,
  ) {
    super(machines, "daytona", options);
  }

  /** By id, or by name as Daytona also allows. */
  override get(idOrName: string): Sandbox | undefined {
    return this.sandboxes.get(idOrName) ?? this.list().find((sandbox) => sandbox.record.name === idOrName);
  }

  /** Takes over the containers an earlier emulator of this instance left. */
  async adopt(): Promise<void> {
    for await (const { record, containerId, now } of this.unadopted(recordOf, (found) => found.sandboxId)) {
      if (now.state === "paused") await this.machines.unpause(containerId);
      const network = await loadNetwork(this.machines, containerId, record);
      const sandbox = new Sandbox(
        record,
        containerId,
        this.machines,
        {
          state: now.state === "stopped" ? "stopped" : "started",
          ip: now.ip,
          startedAt: now.startedAt,
          createdAt: now.createdAt,
        },
        network,
      );
      if (sandbox.state === "started") await this.enforcer.enforce(sandbox);
      this.sandboxes.set(record.sandboxId, sandbox);
      this.touch(sandbox);
      this.log(`adopted sandbox ${record.sandboxId} (${sandbox.state})`);
    }
  }

  async create({ network, ...request }: NewSandbox): Promise<Sandbox> {
    const sandboxId = randomUUID();
    const record: SandboxRecord = {
      ...request,
      sandboxId,
      name: request.name || sandboxId,
      secret: randomBytes(24).toString("base64url"),
    };
    if (this.get(record.name)) throw new NameTaken(record.name);
    const placeholder = new Sandbox(
      record,
      "",
      this.machines,
      { state: "creating", ip: null, startedAt: new Date(), createdAt: new Date() },
      network,
    );
    this.sandboxes.set(sandboxId, placeholder);
    let containerId: string;
    try {
      containerId = await this.createContainer(sandboxId, labelsOf(record), record.env);
    } catch (error) {
      this.sandboxes.delete(sandboxId);
      throw error;
    }
    // Daytona applies the settings just after the container is up, so does the emulator; a sandbox
    // whose settings cannot be enforced is not handed out
    const sandbox = await (async () => {
      const now = await this.machines.inspect(containerId);
      const made = new Sandbox(record, containerId, this.machines, { ...now, state: "started" }, network);
      await saveNetwork(this.machines, containerId, record, network);
      await this.enforcer.enforce(made);
      return made;
    })().catch(async (error) => {
      this.sandboxes.delete(sandboxId);
      await this.machines.remove(containerId);
      throw error;
    });
    this.sandboxes.set(sandboxId, sandbox);
    this.touch(sandbox);
    this.log(`created sandbox ${sandboxId} (container ${containerId.slice(0, 12)})`);
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
        // the address may be another than before the stop
        await this.enforcer.enforce(sandbox);
      });
      this.change(sandbox, "started");
      this.touch(sandbox);
      this.log(`started sandbox ${sandbox.id}`);
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
      await this.enforcer.forget(sandbox);
      this.change(sandbox, "stopped");
      this.log(`stopped sandbox ${sandbox.id}`);
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

  /**
   * Takes new network settings: on the container at once while it runs (Daytona's runner rewrites
   * the sandbox's chain before it answers), else at its next start.
   */
  setNetwork(sandbox: Sandbox, change: (current: NetworkSettings) => NetworkSettings): Promise<void> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      const network = change(sandbox.network);
      await this.guard(sandbox, () =>
        saveNetwork(this.machines, sandbox.containerId, sandbox.record, network),
      );
      sandbox.network = network;
      sandbox.updatedAt = new Date();
      if (sandbox.state === "started") await this.enforcer.enforce(sandbox);
    });
  }

  /** Every container of the instance goes, and the firewall rules of those that ran. */
  override async removeAll(): Promise<void> {
    const owned = await this.containers();
    const addresses = await Promise.all(
      owned.map((machine) =>
        this.machines.inspect(machine.containerId).then(
          (now) => now.ip,
          () => null,
        ),
      ),
    );
    await super.removeAll();
    for (const address of addresses) if (address) await this.enforcer.releaseAddress(address);
  }

  /** Marks activity: an idle sandbox with an autoStopInterval is stopped when it runs out. */
  touch(sandbox: Sandbox): void {
    sandbox.lastActivityAt = new Date();
    clearTimeout(sandbox.idleTimer);
    if (sandbox.state !== "started" || sandbox.autoStopInterval <= 0) return;
    sandbox.idleTimer = setTimeout(
      () => {
        this.log(`sandbox ${sandbox.id} was idle for ${sandbox.autoStopInterval} min`);
        this.stop(sandbox).catch((error) => this.log(`auto-stop failed: ${String(error)}`));
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

  private async destroy(sandbox: Sandbox): Promise<void> {
    clearTimeout(sandbox.idleTimer);
    this.change(sandbox, "destroying");
    sandbox.dropAll();
    await this.machines.remove(sandbox.containerId);
    await this.enforcer.forget(sandbox);
    this.change(sandbox, "destroyed");
    this.sandboxes.delete(sandbox.id);
    this.log(`deleted sandbox ${sandbox.id}`);
  }

  private change(sandbox: Sandbox, state: Sandbox["state"]): void {
    sandbox.state = state;
    sandbox.updatedAt = new Date();
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
