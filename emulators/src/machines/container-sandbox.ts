import type { ContainerProcess, ProcessSpec } from "./exec.ts";
import type { Machines } from "./lifecycle.ts";
import type { Finished } from "./run.ts";

/** Something a client holds open into a sandbox; it is cut when the sandbox stops or goes away. */
export interface Connection {
  abort(): void;
}

/**
 * What every vendor's sandbox is to its container: processes run in it, client connections held
 * open into it (cut together when the vendor would cut them), and lifecycle changes made one at a
 * time.
 */
export class ContainerSandbox {
  private readonly connections = new Set<Connection>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly containerId: string,
    protected readonly machines: Machines,
  ) {}

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

  /** Cuts every client connection, as the vendor's proxy does when a sandbox stops or dies. */
  dropConnections(): void {
    for (const connection of this.connections) connection.abort();
    this.connections.clear();
  }

  /** Runs lifecycle changes one at a time: a stop or pause never races a start or a delete. */
  exclusive<T>(change: () => Promise<T>): Promise<T> {
    const result = this.queue.then(change, change);
    this.queue = result.catch(() => undefined);
    return result;
  }
}
