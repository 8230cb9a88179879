import type { ContainerProcess, Finished, MachineState, Machines, ProcessSpec } from "../machines/index.ts";
import { ProcessTable } from "./process-table.ts";
import type { SandboxRecord } from "./records.ts";
import { SandboxUsers } from "./users.ts";

/** E2B's two states: a container stopped to its disk is a paused sandbox whose memory was dropped. */
export type SandboxState = "running" | "paused";

/** Something a client holds open into a sandbox; it is cut when the sandbox pauses or goes away. */
export interface Connection {
  abort(): void;
}

/** One sandbox: its record (from its container's labels) and what the emulator does with it now. */
export class Sandbox {
  readonly processes: ProcessTable;
  readonly users: SandboxUsers;
  machineState: MachineState;
  /** The container's address on the bridge network, where port traffic goes. */
  ip: string | null;
  startedAt: Date;
  /** When the timeout pauses or kills it; only meaningful while it runs. */
  deadline: Date;
  timer: NodeJS.Timeout | undefined;
  private readonly connections = new Set<Connection>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly record: SandboxRecord,
    readonly containerId: string,
    private readonly machines: Machines,
    now: { machineState: MachineState; ip: string | null; startedAt: Date },
  ) {
    this.processes = new ProcessTable(machines, containerId);
    this.users = new SandboxUsers(machines, containerId);
    this.machineState = now.machineState;
    this.ip = now.ip;
    this.startedAt = now.startedAt;
    this.deadline = now.startedAt;
  }

  get id(): string {
    return this.record.sandboxId;
  }

  get state(): SandboxState {
    return this.machineState === "running" ? "running" : "paused";
  }

  /** Starts a process in the sandbox's container. */
  spawn(spec: ProcessSpec): Promise<ContainerProcess> {
    return this.machines.spawn(this.containerId, spec);
  }

  /** Runs a short helper in the sandbox's container to its end. */
  run(
    spec: Omit<ProcessSpec, "stdin">,
    options?: { timeoutMs?: number; maxStdoutBytes?: number },
  ): Promise<Finished> {
    return this.machines.run(this.containerId, spec, options);
  }

  /** Signals a pid inside the sandbox (e.g. "KILL"); false when there is no such process. */
  signal(pid: number, signal: string): Promise<boolean> {
    return this.machines.signal(this.containerId, pid, signal);
  }

  /** Keeps `connection` until the returned release is called, or the sandbox cuts it. */
  hold(connection: Connection): () => void {
    this.connections.add(connection);
    return () => this.connections.delete(connection);
  }

  /** Cuts every client connection, as E2B's proxy does when a sandbox pauses or dies. */
  dropConnections(): void {
    for (const connection of this.connections) connection.abort();
    this.connections.clear();
  }

  /** Runs lifecycle changes one at a time: a pause never races a resume or a kill. */
  exclusive<T>(change: () => Promise<T>): Promise<T> {
    const result = this.queue.then(change, change);
    this.queue = result.catch(() => undefined);
    return result;
  }
}
