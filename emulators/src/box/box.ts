import { createHmac } from "node:crypto";
import { ContainerSandbox, type Finished, type Machines } from "../machines/index.ts";
import type { BoxRecord, BoxSettings } from "./records.ts";
import { saveSettings } from "./records.ts";

/** Box's states this emulator goes through; `deleting` is the last one a GET can see. */
export type BoxState = "provisioning" | "ready" | "archiving" | "archived" | "error" | "deleting";

/** The box's user: commands, files and the desktop are theirs. */
export const BOX_USER = { name: "user", home: "/home/user" } as const;

/** The desktop stream of one ready spell: x11vnc asked for at the first desktop call. */
export interface Desktop {
  /** When the first desktop call of this spell came (ms): "provisioning" is answered for a while after. */
  requestedAt: number;
  /** x11vnc listens with the box's current password. */
  up: boolean;
  /** Why starting x11vnc failed; the next call tries again. */
  failure: string | null;
}

/** One box: its record (labels), its settings (its disk) and what the emulator does with it now. */
export class Box extends ContainerSandbox {
  state: BoxState;
  /** Counts state changes, so a background step can tell that its box has moved on. */
  generation = 0;
  /** Aborted at every state change: the waits of the phase that ended stop there. */
  phase = new AbortController();
  readonly createdAt: Date;
  updatedAt: Date;
  /** The container's address on the bridge network, while it runs. */
  ip: string | null = null;
  /** When the container last started: every boot has its own desktop token and VNC password. */
  startedAt: Date | null;
  ttlTimer: NodeJS.Timeout | undefined;
  desktop: Desktop | null = null;
  /** Where the next detached command's id search starts (the ids on the box's disk are skipped). */
  nextProcessId = 1;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    readonly record: BoxRecord,
    public settings: BoxSettings,
    containerId: string,
    machines: Machines,
    now: { state: BoxState; createdAt: Date; startedAt: Date | null },
  ) {
    super(containerId, machines);
    this.state = now.state;
    this.createdAt = now.createdAt;
    this.updatedAt = new Date();
    this.startedAt = now.startedAt;
  }

  get id(): string {
    return this.record.boxId;
  }

  /**
   * Moves the box to `state`: the phase that ended stops waiting, its desktop spell ends, and
   * outside `ready` every desktop socket is cut. The new generation, for the steps that follow.
   */
  change(state: BoxState): number {
    this.state = state;
    this.generation++;
    this.updatedAt = new Date();
    this.phase.abort(new Error(`box ${this.id} is ${state} now`));
    this.phase = new AbortController();
    this.desktop = null;
    if (state !== "ready") this.dropConnections();
    return this.generation;
  }

  /** A secret of this boot: new at every resume, gone while the box is not ready. */
  private bootSecret(purpose: string, length: number): string | null {
    if (this.state !== "ready" || !this.startedAt) return null;
    return createHmac("sha256", this.record.secret)
      .update(`${purpose}:${this.startedAt.toISOString()}`)
      .digest("base64url")
      .slice(0, length);
  }

  get desktopToken(): string | null {
    return this.bootSecret("desktop", 32);
  }

  /** VNC authentication uses 8 characters of a password at the most. */
  get vncPassword(): string | null {
    return this.bootSecret("vnc", 8);
  }

  /** What the box's commands run with: HOME and the user, the box's env, the account's secrets unless noEnv. */
  commandEnv(): Record<string, string> {
    const account: Record<string, string> = this.settings.noEnv
      ? {}
      : {
          ASCII_TOKEN: `ascii_emulated_${createHmac("sha256", this.record.secret).update("account").digest("hex").slice(0, 32)}`,
          BOX_ID: this.id,
        };
    return {
      HOME: BOX_USER.home,
      USER: BOX_USER.name,
      LOGNAME: BOX_USER.name,
      ...this.settings.env,
      ...account,
    };
  }

  /** Writes the settings to the box's disk, one write after the other, each with the latest settings. */
  save(): Promise<void> {
    const saved = this.saving.then(() => saveSettings(this.machines, this.containerId, this.settings));
    this.saving = saved.catch(() => undefined);
    return saved;
  }

  /** Runs a helper script as the box user to its end. */
  script(
    script: string,
    args: string[],
    options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number; maxStdoutBytes?: number } = {},
  ): Promise<Finished> {
    return this.run(
      {
        argv: ["bash", "-c", script, "box", ...args],
        user: BOX_USER.name,
        cwd: options.cwd ?? BOX_USER.home,
        env: { HOME: BOX_USER.home, ...options.env },
      },
      options,
    );
  }
}
