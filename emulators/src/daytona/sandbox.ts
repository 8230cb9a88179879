import { createHmac } from "node:crypto";
import type { ContainerProcess, Finished, Machines, ProcessSpec } from "../machines/index.ts";
import type { SandboxRecord } from "./records.ts";
import { Sessions } from "./sessions.ts";
import { SANDBOX_USER } from "./user.ts";

/** Daytona's states this emulator goes through; `destroyed` is only ever the last answer. */
export type SandboxState =
  | "creating"
  | "starting"
  | "started"
  | "stopping"
  | "stopped"
  | "destroying"
  | "destroyed";

/** Something a client holds open into a sandbox; it is cut when the sandbox stops or goes away. */
export interface Connection {
  abort(): void;
}

/** One sandbox: its record (from its container's labels) and what the emulator does with it now. */
export class Sandbox {
  state: SandboxState;
  /** The container's address on the bridge network, where preview traffic goes. */
  ip: string | null;
  /** When the container last started: a new start is a new preview token. */
  startedAt: Date;
  readonly createdAt: Date;
  updatedAt: Date;
  lastActivityAt: Date;
  autoStopInterval: number;
  /** Stops the sandbox once it has been idle for autoStopInterval minutes. */
  idleTimer: NodeJS.Timeout | undefined;
  readonly sessions: Sessions;
  private readonly connections = new Set<Connection>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly record: SandboxRecord,
    readonly containerId: string,
    private readonly machines: Machines,
    now: { state: SandboxState; ip: string | null; startedAt: Date; createdAt: Date },
  ) {
    this.state = now.state;
    this.ip = now.ip;
    this.startedAt = now.startedAt;
    this.createdAt = now.createdAt;
    this.updatedAt = new Date();
    this.lastActivityAt = this.updatedAt;
    this.autoStopInterval = record.autoStopInterval;
    this.sessions = new Sessions(this);
  }

  get id(): string {
    return this.record.sandboxId;
  }

  /** The preview token of this start; none while the sandbox is not started. */
  get previewToken(): string | null {
    if (this.state !== "started") return null;
    return createHmac("sha256", this.record.secret)
      .update(this.startedAt.toISOString())
      .digest("base64url")
      .slice(0, 32);
  }

  spawn(spec: ProcessSpec): Promise<ContainerProcess> {
    return this.machines.spawn(this.containerId, spec);
  }

  run(
    spec: Omit<ProcessSpec, "stdin">,
    options?: { timeoutMs?: number; maxStdoutBytes?: number },
  ): Promise<Finished> {
    return this.machines.run(this.containerId, spec, options);
  }

  /** Runs a shell script as the sandbox user, in their home, to its end. */
  script(
    script: string,
    args: string[] = [],
    options?: { env?: Record<string, string>; timeoutMs?: number; maxStdoutBytes?: number },
  ): Promise<Finished> {
    return this.run(
      {
        argv: ["bash", "-c", script, "daytona", ...args],
        user: SANDBOX_USER.name,
        cwd: SANDBOX_USER.home,
        ...(options?.env ? { env: options.env } : {}),
      },
      options,
    );
  }

  signal(pid: number, signal: string): Promise<boolean> {
    return this.machines.signal(this.containerId, pid, signal);
  }

  /** Keeps `connection` until the returned release is called, or the sandbox cuts it. */
  hold(connection: Connection): () => void {
    this.connections.add(connection);
    return () => this.connections.delete(connection);
  }

  /** Cuts every client connection and forgets the sessions, as a stop or delete does. */
  dropAll(): void {
    for (const connection of this.connections) connection.abort();
    this.connections.clear();
    this.sessions.forget();
  }

  /** Runs lifecycle changes one at a time: a stop never races a start or a delete. */
  exclusive<T>(change: () => Promise<T>): Promise<T> {
    const result = this.queue.then(change, change);
    this.queue = result.catch(() => undefined);
    return result;
  }
}
