import { ContainerSandbox, type MachineState, type Machines } from "../machines/index.ts";
import { OPEN_NETWORK, type SandboxNetwork } from "./network.ts";
import { ProcessTable } from "./process-table.ts";
import type { SandboxRecord } from "./records.ts";
import { SandboxUsers } from "./users.ts";

/** E2B's two states: a container stopped to its disk is a paused sandbox whose memory was dropped. */
export type SandboxState = "running" | "paused";

/** One sandbox: its record (from its container's labels) and what the emulator does with it now. */
export class Sandbox extends ContainerSandbox {
  readonly processes: ProcessTable;
  readonly users: SandboxUsers;
  machineState: MachineState;
  /** The container's address on the bridge network, where port traffic goes. */
  ip: string | null;
  startedAt: Date;
  /** When the timeout pauses or kills it; only meaningful while it runs. */
  deadline: Date;
  timer: NodeJS.Timeout | undefined;
  /** Its outbound settings, enforced on the container's address while it has one. */
  network: SandboxNetwork = OPEN_NETWORK;

  constructor(
    readonly record: SandboxRecord,
    containerId: string,
    machines: Machines,
    now: { machineState: MachineState; ip: string | null; startedAt: Date },
  ) {
    super(containerId, machines);
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
}
