import { CHROMIUM_SECCOMP } from "@cubicle/computer-image/seccomp";
import type Docker from "dockerode";
import { firstFileOf, tarOfFile } from "./archive.ts";
import { bounded, engineStatus, MachineMissing, machineError } from "./engine.ts";
import { type ContainerProcess, type ProcessSpec, spawnProcess } from "./exec.ts";
import { type Finished, runToEnd, signalProcess } from "./run.ts";
import { StartGate } from "./start-gate.ts";

export interface MachineSpec {
  image: string;
  /** A readable container name; must be unique on the engine. */
  name: string;
  labels: Record<string, string>;
  /** The environment of the container and so of every exec in it. */
  env: Record<string, string>;
  /** Size of /dev/shm; browsers need more than Docker's 64 MB. */
  shmBytes: number;
}

/** running: processes run; paused: frozen in memory (docker pause); stopped: only the disk is left. */
export type MachineState = "running" | "paused" | "stopped";

export interface MachineInfo {
  containerId: string;
  labels: Record<string, string>;
  state: MachineState;
  createdAt: Date;
}

function stateOf(state: { Running: boolean; Paused: boolean }): MachineState {
  if (state.Paused) return "paused";
  return state.Running ? "running" : "stopped";
}

/**
 * Desktop containers on the local Docker engine, created with labels so an emulator can find its
 * own again after a restart. Every call is bounded; a container that is gone is a MachineMissing.
 */
export class Machines {
  private readonly gates = new Map<string, StartGate>();

  constructor(private readonly engine: Docker) {}

  private container(containerId: string): Docker.Container {
    return this.engine.getContainer(containerId);
  }

  /** Creates and starts a container on the default bridge network; its id. */
  async create(spec: MachineSpec): Promise<string> {
    const container = await bounded((options) =>
      this.engine.createContainer({
        name: spec.name,
        Image: spec.image,
        Labels: spec.labels,
        Env: Object.entries(spec.env).map(([name, value]) => `${name}=${value}`),
        HostConfig: {
          ShmSize: spec.shmBytes,
          NetworkMode: "bridge",
          // the vendors' sandboxes are VMs, where Chromium's own sandbox starts: so it does here
          SecurityOpt: [CHROMIUM_SECCOMP],
        },
        ...options,
      }),
    );
    try {
      await bounded((options) => container.start(options));
    } catch (error) {
      await this.remove(container.id).catch(() => undefined);
      throw error;
    }
    return container.id;
  }

  /** The container now; `startedAt` is when it last started, which every start changes. */
  async inspect(containerId: string): Promise<MachineInfo & { ip: string | null; startedAt: Date }> {
    try {
      const info = await bounded((options) => this.container(containerId).inspect(options));
      const networks = Object.values(info.NetworkSettings.Networks ?? {});
      const ip = networks.map((network) => network.IPAddress).find((address) => address) ?? null;
      return {
        containerId: info.Id,
        labels: info.Config.Labels ?? {},
        state: stateOf(info.State),
        createdAt: new Date(info.Created),
        startedAt: new Date(info.State.StartedAt),
        ip,
      };
    } catch (error) {
      throw machineError(containerId, error);
    }
  }

  /** The containers carrying every one of `labels`, in any state. */
  async list(labels: Record<string, string>): Promise<MachineInfo[]> {
    const filters = { label: Object.entries(labels).map(([name, value]) => `${name}=${value}`) };
    const containers = await bounded((options) =>
      this.engine.listContainers({ all: true, filters, ...options }),
    );
    return containers.map((container) => ({
      containerId: container.Id,
      labels: container.Labels ?? {},
      state: container.State === "paused" ? "paused" : container.State === "running" ? "running" : "stopped",
      createdAt: new Date(container.Created * 1000),
    }));
  }

  /** Freezes every process in memory; they carry on where they were on unpause. */
  async pause(containerId: string): Promise<void> {
    await this.gate(containerId).freeze(() =>
      this.call(containerId, (container) => bounded((options) => container.pause(options))),
    );
  }

  async unpause(containerId: string): Promise<void> {
    await this.call(containerId, (container) => bounded((options) => container.unpause(options)));
  }

  /** Stops every process; the disk stays, and start() boots the container afresh from it. */
  async stop(containerId: string): Promise<void> {
    await this.gate(containerId).freeze(() =>
      this.call(containerId, async (container) => {
        try {
          await bounded((options) => container.stop({ t: 2, ...options }));
        } catch (error) {
          if (engineStatus(error) !== 304) throw error; // already stopped
        }
      }),
    );
  }

  async start(containerId: string): Promise<void> {
    await this.call(containerId, (container) => bounded((options) => container.start(options)));
  }

  /** Removes the container whatever its state; a container already gone is not an error. */
  async remove(containerId: string): Promise<void> {
    try {
      await bounded((options) => this.container(containerId).remove({ force: true, ...options }));
    } catch (error) {
      if (!(machineError(containerId, error) instanceof MachineMissing)) throw error;
    }
    this.gates.delete(containerId);
  }

  /**
   * Writes a small root-only file (its folder made, mode 0700) into the container, whatever its
   * state: what an emulator keeps on a sandbox that changes, where labels cannot.
   */
  async putFile(containerId: string, path: string, data: Buffer): Promise<void> {
    const tar = tarOfFile(path, data, 0o600);
    await this.call(containerId, (container) =>
      bounded((options) => container.putArchive(tar, { path: "/", ...options })),
    );
  }

  /** A small file of the container (up to `maxBytes`), whatever its state; null when it is not there. */
  async getFile(containerId: string, path: string, maxBytes = 1024 * 1024): Promise<Buffer | null> {
    let tar: Buffer;
    try {
      tar = await bounded(async (options) => {
        const stream = await this.container(containerId).getArchive({ path, ...options });
        const chunks: Buffer[] = [];
        let length = 0;
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          length += chunk.length;
          if (length > maxBytes + 64 * 1024) throw new Error(`${path} is larger than ${maxBytes} bytes`);
          chunks.push(chunk);
        }
        return Buffer.concat(chunks);
      });
    } catch (error) {
      const failure = machineError(containerId, error);
      // the engine's 404 is the file's as much as the container's
      if (failure instanceof MachineMissing) return null;
      throw failure;
    }
    return firstFileOf(tar);
  }

  /** Starts a process in the container; its output streams as it is read. */
  spawn(containerId: string, spec: ProcessSpec): Promise<ContainerProcess> {
    return this.gate(containerId).start(() => spawnProcess(this.container(containerId), spec));
  }

  /** Runs a short helper to the end; see runToEnd. */
  run(
    containerId: string,
    spec: Omit<ProcessSpec, "stdin">,
    options?: { timeoutMs?: number; maxStdoutBytes?: number },
  ): Promise<Finished> {
    return runToEnd((helper) => this.spawn(containerId, helper), spec, options);
  }

  /** Signals a pid inside the container; false when there is no such process. */
  signal(containerId: string, pid: number, signal: string): Promise<boolean> {
    return signalProcess((helper) => this.spawn(containerId, helper), pid, signal);
  }

  private gate(containerId: string): StartGate {
    let gate = this.gates.get(containerId);
    if (!gate) {
      gate = new StartGate();
      this.gates.set(containerId, gate);
    }
    return gate;
  }

  private async call(containerId: string, action: (container: Docker.Container) => Promise<unknown>) {
    try {
      await action(this.container(containerId));
    } catch (error) {
      throw machineError(containerId, error);
    }
  }
}
