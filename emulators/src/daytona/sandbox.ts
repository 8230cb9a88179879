import { createHmac } from "node:crypto";
import { ContainerSandbox, type Finished, type Machines } from "../machines/index.ts";
import type { NetworkSettings } from "./network.ts";
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

/** One sandbox: its record (from its container's labels) and what the emulator does with it now. */
export class Sandbox extends ContainerSandbox {
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
  /** Its outbound network settings, enforced on the container while it runs. */
  network: NetworkSettings;

  constructor(
    readonly record: SandboxRecord,
    containerId: string,
    machines: Machines,
    now: { state: SandboxState; ip: string | null; startedAt: Date; createdAt: Date },
    network: NetworkSettings,
  ) {
    super(containerId, machines);
    this.network = network;
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

  /** Cuts every client connection and forgets the sessions, as a stop or delete does. */
  dropAll(): void {
    this.dropConnections();
    this.sessions.forget();
  }
}
