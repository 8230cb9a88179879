import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { type MachineRef, ProviderError } from "../contract/index.ts";
import type { Confinement } from "./files.ts";
import type { Screen } from "./screens.ts";

export const HOME_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export interface Machine {
  readonly providerRef: string;
  readonly homeKey: string;
  /** Real path of the folder that holds the homes (imports build the new home beside the old one). */
  readonly homesDir: string;
  readonly files: Confinement;
  running: boolean;
  /** Bumped on every stop, so a screen that was still starting knows to give up. */
  generation: number;
  /** Process groups of commands and archive jobs; all are killed when the machine stops. */
  readonly groups: Set<ChildProcess>;
  readonly screens: Map<number, Screen>;
  readonly screenStarts: Map<number, Promise<Screen>>;
}

/**
 * Machines live only in memory: a computer on the host cannot outlive the host's restart, and
 * its durable part, the home, stays on disk under homesDir regardless.
 */
export class MachineRegistry {
  private readonly machines = new Map<string, Machine>();

  add(homeKey: string, homesDir: string, files: Confinement): Machine {
    const machine: Machine = {
      providerRef: `desktop-${homeKey}-${randomBytes(4).toString("hex")}`,
      homeKey,
      homesDir,
      files,
      running: true,
      generation: 0,
      groups: new Set(),
      screens: new Map(),
      screenStarts: new Map(),
    };
    this.machines.set(machine.providerRef, machine);
    return machine;
  }

  find(ref: MachineRef): Machine | undefined {
    if (ref.providerRef === null) return undefined;
    const machine = this.machines.get(ref.providerRef);
    // a handle only counts for the home it was made for
    return machine?.homeKey === ref.homeKey ? machine : undefined;
  }

  require(ref: MachineRef): Machine {
    const machine = this.find(ref);
    if (!machine)
      throw new ProviderError("MACHINE_MISSING", "this computer's machine does not exist any more");
    return machine;
  }

  requireRunning(ref: MachineRef): Machine {
    const machine = this.require(ref);
    if (!machine.running) throw new ProviderError("MACHINE_STOPPED", "this computer is stopped");
    return machine;
  }

  forget(machine: Machine): void {
    this.machines.delete(machine.providerRef);
  }

  all(): Machine[] {
    return [...this.machines.values()];
  }
}
