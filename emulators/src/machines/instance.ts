import type { ContainerSandbox } from "./container-sandbox.ts";
import { MachineMissing } from "./engine.ts";
import type { MachineInfo, Machines } from "./lifecycle.ts";

const EMULATOR_LABEL = "cubicle.emulator";
const INSTANCE_LABEL = "cubicle.emulator.instance";
/** Browsers need more shared memory than Docker's default 64 MB. */
const SHM_BYTES = 256 * 1024 * 1024;

/** What every emulator is started with; a vendor's options add its own. */
export interface EmulatorOptions {
  /** Default: random, in the vendor's key format. */
  apiKey?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default: ephemeral. */
  port?: number;
  /**
   * Names which containers are this emulator's (default "default"). A new emulator with the same
   * instance adopts them, so its sandboxes outlive a restart.
   */
  instance?: string;
  /** Default: the vendor's desktop image. */
  image?: string;
  log?: (line: string) => void;
}

export interface InstanceOptions {
  /** Names which containers are this emulator's; a new emulator with the same instance adopts them. */
  instance: string;
  /** The desktop image every sandbox of the emulator runs. */
  image: string;
  log: (line: string) => void;
}

/** The instance an emulator started with `options` keeps: its name, its image (`image` unless told), its log. */
export function instanceOf(options: EmulatorOptions, image: string): InstanceOptions {
  return {
    instance: options.instance ?? "default",
    image: options.image ?? image,
    log: options.log ?? (() => undefined),
  };
}

/**
 * The sandboxes of one emulator instance, each a desktop container; a vendor's registry adds its
 * lifecycle. The containers' labels tell them apart from other emulators' and other instances', so
 * an emulator that starts again finds what an earlier one left.
 */
export class InstanceSandboxes<S extends ContainerSandbox & { readonly id: string }> {
  protected readonly sandboxes = new Map<string, S>();
  private readonly instanceLabels: Record<string, string>;
  private readonly containerPrefix: string;
  private readonly image: string;
  protected readonly log: (line: string) => void;

  constructor(
    protected readonly machines: Machines,
    kind: string,
    options: InstanceOptions,
  ) {
    this.instanceLabels = { [EMULATOR_LABEL]: kind, [INSTANCE_LABEL]: options.instance };
    this.containerPrefix = `cubicle-${kind}-${options.instance}-`;
    this.image = options.image;
    this.log = options.log;
  }

  get(sandboxId: string): S | undefined {
    return this.sandboxes.get(sandboxId);
  }

  list(): S[] {
    return [...this.sandboxes.values()];
  }

  /** Removes every container of the instance, including ones no sandbox was adopted from. */
  async removeAll(): Promise<void> {
    const machines = await this.containers();
    await Promise.all(machines.map((machine) => this.machines.remove(machine.containerId)));
  }

  /** Every container of the instance, in any state. */
  protected containers(): Promise<MachineInfo[]> {
    return this.machines.list(this.instanceLabels);
  }

  /**
   * The containers of the instance whose sandbox is not known yet, to adopt: each with the record
   * its labels hold (containers without one are left alone) and how it is now.
   */
  protected async *unadopted<R>(
    recordOf: (labels: Record<string, string>) => R | null,
    idOf: (record: R) => string,
  ): AsyncGenerator<{ record: R; containerId: string; now: Awaited<ReturnType<Machines["inspect"]>> }> {
    for (const machine of await this.containers()) {
      const record = recordOf(machine.labels);
      if (!record || this.sandboxes.has(idOf(record))) continue;
      yield {
        record,
        containerId: machine.containerId,
        now: await this.machines.inspect(machine.containerId),
      };
    }
  }

  /** Creates and starts the container of sandbox `sandboxId`, with the sandbox's own labels too. */
  protected createContainer(
    sandboxId: string,
    labels: Record<string, string>,
    env: Record<string, string>,
  ): Promise<string> {
    return this.machines.create({
      image: this.image,
      name: `${this.containerPrefix}${sandboxId}`,
      labels: { ...this.instanceLabels, ...labels },
      env,
      shmBytes: SHM_BYTES,
    });
  }

  /** A change to a sandbox deleted meanwhile finds it missing. */
  protected ensureKnown(sandbox: S): void {
    if (this.sandboxes.get(sandbox.id) !== sandbox) throw new MachineMissing(sandbox.containerId);
  }
}

/** A string map kept as a JSON label; a damaged label loses the map, not the sandbox. */
export function mapLabel(text: string | undefined): Record<string, string> {
  try {
    const parsed: unknown = JSON.parse(text ?? "{}");
    if (typeof parsed === "object" && parsed !== null) return parsed as Record<string, string>;
  } catch {
    // the empty map below
  }
  return {};
}
