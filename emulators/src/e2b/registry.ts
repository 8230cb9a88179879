import type { MachineFirewall } from "../machines/firewall.ts";
import { type InstanceOptions, InstanceSandboxes, MachineMissing, type Machines } from "../machines/index.ts";
import { newSandboxId, newToken } from "./ids.ts";
import { NETWORK_PATH, networkOfFile, outboundRulesOf, type SandboxNetwork } from "./network.ts";
import { labelsOf, recordOf, type SandboxRecord } from "./records.ts";
import { Sandbox } from "./sandbox.ts";

export interface NewSandbox {
  templateId: string;
  metadata: Record<string, string>;
  envVars: Record<string, string>;
  timeoutSeconds: number;
  autoPause: boolean;
  autoPauseMemory: boolean;
  allowPublicTraffic: boolean;
  network: SandboxNetwork;
}

/** setTimeout's longest delay; longer deadlines are checked again when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The sandboxes of one emulator instance, each a container on the local engine. Lifecycle changes
 * of one sandbox run one at a time (Sandbox.exclusive).
 */
export class SandboxRegistry extends InstanceSandboxes<Sandbox> {
  constructor(
    machines: Machines,
    options: InstanceOptions,
    private readonly firewall: MachineFirewall,
  ) {
    super(machines, "e2b", options);
  }

  /** Takes over the containers an earlier emulator of this instance left; running ones get a fresh deadline. */
  async adopt(): Promise<void> {
    for await (const { record, containerId, now } of this.unadopted(recordOf, (found) => found.sandboxId)) {
      const sandbox = new Sandbox(record, containerId, this.machines, {
        machineState: now.state,
        ip: now.ip,
        startedAt: now.createdAt,
      });
      sandbox.network = networkOfFile(await this.machines.getFile(containerId, NETWORK_PATH));
      this.sandboxes.set(record.sandboxId, sandbox);
      await this.enforce(sandbox);
      if (sandbox.state === "running") this.arm(sandbox, record.timeoutSeconds);
      this.log(`adopted sandbox ${record.sandboxId} (${sandbox.state})`);
    }
  }

  async create(request: NewSandbox): Promise<Sandbox> {
    const record: SandboxRecord = {
      sandboxId: newSandboxId(),
      templateId: request.templateId,
      metadata: request.metadata,
      envdAccessToken: newToken(),
      trafficAccessToken: request.allowPublicTraffic ? null : newToken(),
      autoPause: request.autoPause,
      autoPauseMemory: request.autoPauseMemory,
      timeoutSeconds: request.timeoutSeconds,
    };
    const containerId = await this.createContainer(record.sandboxId, labelsOf(record), request.envVars);
    let sandbox: Sandbox;
    try {
      const { ip, createdAt } = await this.machines.inspect(containerId);
      sandbox = new Sandbox(record, containerId, this.machines, {
        machineState: "running",
        ip,
        startedAt: createdAt,
      });
      sandbox.network = request.network;
      await this.saveNetwork(sandbox);
      // E2B's rules hold before its sandbox runs anything; here the container runs a moment before
      await this.enforce(sandbox);
    } catch (error) {
      await this.machines.remove(containerId);
      throw error;
    }
    this.sandboxes.set(record.sandboxId, sandbox);
    this.arm(sandbox, request.timeoutSeconds);
    this.log(`created sandbox ${record.sandboxId} (container ${containerId.slice(0, 12)})`);
    return sandbox;
  }

  /**
   * Pauses a running sandbox: with memory, every process is frozen where it is (docker pause);
   * without, the container stops and only its disk is kept. False when it was paused already.
   */
  pause(sandbox: Sandbox, keepMemory: boolean): Promise<boolean> {
    return sandbox.exclusive(() => this.pauseNow(sandbox, keepMemory));
  }

  /**
   * E2B's connect: a running sandbox gets the longer of its deadline and the new one; a paused one
   * is resumed (processes and memory as they were, or booted from its disk when it was paused
   * without memory or `memory` is false). "resumed" or "running" says which.
   */
  connect(sandbox: Sandbox, timeoutSeconds: number, memory: boolean): Promise<"resumed" | "running"> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      if (sandbox.state === "running") {
        if (Date.now() + timeoutSeconds * 1000 > sandbox.deadline.getTime())
          this.arm(sandbox, timeoutSeconds);
        return "running";
      }
      await this.guard(sandbox, async () => {
        if (sandbox.machineState === "paused") await this.machines.unpause(sandbox.containerId);
        if (sandbox.machineState === "stopped" || !memory) await this.reboot(sandbox);
      });
      sandbox.machineState = "running";
      try {
        await this.enforce(sandbox);
      } catch (error) {
        // a sandbox whose rules cannot be enforced does not run
        await this.machines.stop(sandbox.containerId).catch(() => undefined);
        sandbox.processes.detachAll();
        sandbox.machineState = "stopped";
        await this.unenforce(sandbox).catch(() => undefined);
        throw error;
      }
      this.arm(sandbox, timeoutSeconds);
      this.log(`resumed sandbox ${sandbox.id}`);
      return "resumed";
    });
  }

  /**
   * E2B's live network update: the new settings are enforced when this returns. False when the
   * sandbox is paused (E2B changes only a running sandbox's network).
   */
  updateNetwork(sandbox: Sandbox, network: SandboxNetwork): Promise<boolean> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      if (sandbox.state !== "running") return false;
      // enforced first: settings that could not be enforced are neither kept nor echoed
      await this.enforce(sandbox, network);
      sandbox.network = network;
      await this.guard(sandbox, () => this.saveNetwork(sandbox));
      this.log(`updated the network of sandbox ${sandbox.id}`);
      return true;
    });
  }

  /** A new deadline for a running sandbox, shorter or longer than the last. */
  setTimeout(sandbox: Sandbox, timeoutSeconds: number): void {
    this.arm(sandbox, timeoutSeconds);
  }

  /** Removes the sandbox's container; every connection to it is cut. */
  kill(sandbox: Sandbox): Promise<void> {
    return sandbox.exclusive(async () => {
      this.ensureKnown(sandbox);
      this.drop(sandbox);
      await this.machines.remove(sandbox.containerId);
      await this.unenforce(sandbox);
      this.log(`killed sandbox ${sandbox.id}`);
    });
  }

  /** Forgets a sandbox whose container went away behind the emulator's back, and the rules on its address. */
  lost(sandbox: Sandbox): void {
    this.drop(sandbox);
    this.unenforce(sandbox).catch((error: unknown) =>
      this.log(`the rules of lost sandbox ${sandbox.id} stay: ${String(error)}`),
    );
  }

  private drop(sandbox: Sandbox): void {
    clearTimeout(sandbox.timer);
    sandbox.dropConnections();
    sandbox.processes.detachAll();
    this.sandboxes.delete(sandbox.id);
  }

  /** Removes every container of the instance and the rules on their addresses. */
  override async removeAll(): Promise<void> {
    for (const machine of await this.containers()) {
      const { ip } = await this.machines.inspect(machine.containerId).catch(() => ({ ip: null }));
      await this.machines.remove(machine.containerId);
      if (ip) await this.firewall.release(ip);
    }
  }

  /** Enforces the sandbox's settings on its container's address (a stopped one has none). */
  private async enforce(sandbox: Sandbox, network = sandbox.network): Promise<void> {
    if (sandbox.ip) await this.firewall.apply(sandbox.ip, await outboundRulesOf(network));
  }

  /** The container lost its address (stopped or removed): another container may get it, without these rules. */
  private async unenforce(sandbox: Sandbox): Promise<void> {
    const { ip } = sandbox;
    sandbox.ip = null;
    if (ip) await this.firewall.release(ip);
  }

  private saveNetwork(sandbox: Sandbox): Promise<void> {
    return this.machines.putFile(
      sandbox.containerId,
      NETWORK_PATH,
      Buffer.from(JSON.stringify(sandbox.network)),
    );
  }

  /** Stops every timer and cuts every connection; the containers stay as they are, to be adopted. */
  release(): void {
    for (const sandbox of this.list()) {
      clearTimeout(sandbox.timer);
      sandbox.dropConnections();
      sandbox.processes.detachAll();
    }
    this.sandboxes.clear();
  }

  private async pauseNow(sandbox: Sandbox, keepMemory: boolean): Promise<boolean> {
    this.ensureKnown(sandbox);
    if (sandbox.state === "paused") return false;
    clearTimeout(sandbox.timer);
    // paused before the connections are cut: a client that asks /health after its stream broke
    // must hear that the sandbox is not running, as it would from E2B
    sandbox.machineState = keepMemory ? "paused" : "stopped";
    sandbox.dropConnections();
    try {
      await this.guard(sandbox, async () => {
        if (keepMemory) {
          await this.machines.pause(sandbox.containerId);
        } else {
          await this.machines.stop(sandbox.containerId);
          sandbox.processes.detachAll();
          await this.unenforce(sandbox);
        }
      });
    } catch (error) {
      sandbox.machineState = "running";
      this.arm(sandbox, sandbox.record.timeoutSeconds);
      throw error;
    }
    this.log(`paused sandbox ${sandbox.id}${keepMemory ? "" : " (disk only)"}`);
    return true;
  }

  /** Boots the container afresh from its disk: no process survives, the address may change. */
  private async reboot(sandbox: Sandbox): Promise<void> {
    await this.machines.stop(sandbox.containerId);
    sandbox.processes.detachAll();
    await this.unenforce(sandbox);
    await this.machines.start(sandbox.containerId);
    sandbox.ip = (await this.machines.inspect(sandbox.containerId)).ip;
  }

  private arm(sandbox: Sandbox, timeoutSeconds: number): void {
    clearTimeout(sandbox.timer);
    sandbox.deadline = new Date(Date.now() + timeoutSeconds * 1000);
    this.schedule(sandbox);
  }

  private schedule(sandbox: Sandbox): void {
    const wait = Math.min(Math.max(0, sandbox.deadline.getTime() - Date.now()), MAX_TIMER_MS);
    sandbox.timer = setTimeout(() => void this.expire(sandbox), wait);
    sandbox.timer.unref();
  }

  /** The timeout: E2B pauses a sandbox made with autoPause, and kills any other. */
  private async expire(sandbox: Sandbox): Promise<void> {
    try {
      await sandbox.exclusive(async () => {
        if (this.sandboxes.get(sandbox.id) !== sandbox || sandbox.state !== "running") return;
        if (Date.now() < sandbox.deadline.getTime()) {
          this.schedule(sandbox);
          return;
        }
        this.log(`sandbox ${sandbox.id} timed out`);
        if (sandbox.record.autoPause) {
          await this.pauseNow(sandbox, sandbox.record.autoPauseMemory);
        } else {
          this.drop(sandbox);
          await this.machines.remove(sandbox.containerId);
          await this.unenforce(sandbox);
        }
      });
    } catch (error) {
      this.log(`the timeout of sandbox ${sandbox.id} failed: ${String(error)}`);
    }
  }

  /** Runs an engine change; a container found gone means the sandbox is gone. */
  private async guard(sandbox: Sandbox, change: () => Promise<void>): Promise<void> {
    try {
      await change();
    } catch (error) {
      if (error instanceof MachineMissing) this.lost(sandbox);
      throw error;
    }
  }
}
