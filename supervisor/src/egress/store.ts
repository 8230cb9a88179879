import { promises as fs } from "node:fs";
import path from "node:path";
import type { EgressPolicy } from "@cubicle/providers/contract";
import type { ComputerRef } from "@cubicle/providers/supervisor-wire";

/** What the supervisor keeps per computer, so a restart enforces the same policy. */
export interface EgressState {
  ref: ComputerRef;
  policy: EgressPolicy;
  /** Refusals counted by chains since replaced (a chain's counters go with it). */
  refusedBefore: number;
}

/** One JSON file per home key under DATA_DIR/egress, written whole (rename) so a crash leaves one or the other. */
export class EgressStore {
  constructor(private readonly dir: string) {}

  private file(homeKey: string): string {
    return path.join(this.dir, `${homeKey}.json`);
  }

  async get(homeKey: string): Promise<EgressState | null> {
    try {
      return JSON.parse(await fs.readFile(this.file(homeKey), "utf8")) as EgressState;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  }

  async put(state: EgressState): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.file(state.ref.homeKey);
    await fs.writeFile(`${file}.tmp`, JSON.stringify(state), { mode: 0o600 });
    await fs.rename(`${file}.tmp`, file);
  }

  async delete(homeKey: string): Promise<void> {
    await fs.rm(this.file(homeKey), { force: true });
  }
}
