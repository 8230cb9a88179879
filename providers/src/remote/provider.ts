import {
  type ActResult,
  type DesktopAction,
  type EgressPolicy,
  type MachineRef,
  machineStopped,
  type Observation,
  type ProviderCapabilities,
  ProviderError,
  type ProviderKind,
  type SandboxProvider,
  type ScreenTarget,
} from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { kitProgram, type SandboxLayout, type SandboxMachine } from "./machine.ts";
import { sandboxOperations } from "./operations.ts";
import * as screens from "./screens.ts";
import { ACCESS_PROBE_ID } from "./vendor-call.ts";

/**
 * A vendor's machines as the base reads them. `Found` is what one read of a machine gives (the
 * vendor's object or record of it, or only its state); `Vm` is the SDK object commands and screens
 * are reached through, which a vendor may only have once the machine runs.
 */
export interface MachineReader<Found, Vm> {
  /** The machine in whatever state the vendor has it; null when the vendor has none. */
  find(providerRef: string): Promise<Found | null>;
  /** MACHINE_MISSING in the vendor's words. */
  missing(providerRef: string | null): ProviderError;
  /** Whether it runs its processes: a suspended machine runs no browser and no screen server. */
  isRunning(found: Found): boolean;
  /** The SDK object of a found machine that runs. */
  attach(found: Found): Vm | Promise<Vm>;
  /**
   * Set by an adapter whose read gives only a state (E2B's): a machine found running is then read
   * again and taken as `running` takes it (its lifetime pushed forward) before its browsers or a
   * screen's server are closed, and stopping closes the browsers as closeBrowsers does. Otherwise
   * the machine found is used as it is.
   */
  readAgainBeforeUse?: boolean;
}

/** The machine of `ref` in whatever state the vendor has it; MACHINE_MISSING when it has none. */
export async function existingMachine<Found>(
  reader: MachineReader<Found, unknown>,
  ref: MachineRef,
): Promise<Found> {
  const found = ref.providerRef === null ? null : await reader.find(ref.providerRef);
  if (found === null) throw reader.missing(ref.providerRef);
  return found;
}

/**
 * How the vendor's own clock for an unattended machine is pushed forward while Cubicle uses it
 * (at every use, at most once in a while), so the vendor never suspends a computer in use.
 */
export interface MachineLifetime<Found> {
  /** Whether it was last pushed forward long enough ago (or never by this adapter). */
  due(providerRef: string): boolean;
  push(found: Found): Promise<void>;
}

/** How the vendor makes, starts, suspends and removes machines. */
export interface MachineLifecycle<Found, Vm> {
  /** What the vendor calls a machine, in messages. */
  noun: "sandbox" | "box";
  /** An existing machine for provision to reuse (resumed where the vendor resumes on reconnect); null when gone. */
  reconnect(providerRef: string): Promise<Vm | null>;
  create(ref: MachineRef): Promise<Vm>;
  /** Brings a made or reconnected machine to running, ready for Cubicle's kit. */
  bringUp(vm: Vm, ref: MachineRef, reconnected: boolean): Promise<Vm>;
  /**
   * Whether the machine is suspended already, so stopping it has nothing to do; one between
   * states is neither this nor running, and is suspended all the same.
   */
  isSuspended(found: Found): boolean;
  /** Suspends it, keeping its disk. */
  suspend(found: Found): Promise<void>;
  /** Removes a machine for good: one destroyed, or one just made that could not be set up. */
  remove(machine: Found | Vm): Promise<void>;
  /** What the adapter itself keeps for the home, dropped when it is destroyed (E2B: its egress policy). */
  forget?(ref: MachineRef): void;
}

/** How the screens of a running machine are served, seen and driven. */
export interface ScreenServing<Vm> {
  /** INVALID_SCREEN, in the vendor's words, for a screen its machines do not have. */
  requireScreen(index: number): void;
  /** The screen's view-only target, its server started as needed. */
  view(vm: Vm, index: number): Promise<ScreenTarget>;
  control(vm: Vm, index: number, password: string): Promise<ScreenTarget>;
  closeControl(vm: Vm, index: number): Promise<void>;
  observe(vm: Vm, index: number): Promise<Observation>;
  act(vm: Vm, index: number, batch: DesktopAction[]): Promise<ActResult>;
}

/** What one vendor's adapter says: everything the remote backends do not share. */
export interface RemoteVendor<Found, Vm> {
  kind: ProviderKind;
  /** Every remote machine is a desktop without a pty; the vendor says how many screens and what egress. */
  capabilities: Omit<ProviderCapabilities, "graphical" | "pty">;
  layout: SandboxLayout;
  /** The vendor's template's terminal; the browser is the kit's wrapper, which keeps its profile in the home. */
  terminal: string;
  machineOf(vm: Vm): SandboxMachine;
  reader: MachineReader<Found, Vm>;
  lifetime: MachineLifetime<Found>;
  lifecycle: MachineLifecycle<Found, Vm>;
  screens: ScreenServing<Vm>;
  setEgress(ref: MachineRef, policy: EgressPolicy): Promise<void>;
  /** One cheap call that needs the key; by default a read of a machine no vendor hands out. */
  verifyAccess?(): Promise<void>;
  faults?: FaultPlan | undefined;
}

/**
 * The provider contract on a vendor's sandboxes, the same for every vendor once its adapter says
 * how it reads, keeps alive, makes, suspends and removes a machine and serves its screens: what a
 * call needs the machine to be (existing, or running and used) and the order of things (browsers
 * closed before a suspension, a new machine removed when it cannot be set up) live here once.
 */
export function createRemoteProvider<Found, Vm>(vendor: RemoteVendor<Found, Vm>): SandboxProvider {
  const { reader, lifetime, lifecycle, screens: served, machineOf, faults } = vendor;
  const { maxScreens, ...egress } = vendor.capabilities;
  const apps: AppPrograms = {
    browser: { program: kitProgram(vendor.layout, "browser") },
    terminal: { program: vendor.terminal },
  };

  const existing = (ref: MachineRef) => existingMachine(reader, ref);

  /** A running machine, or MACHINE_STOPPED / MACHINE_MISSING; its lifetime is pushed forward as it is used. */
  async function running(ref: MachineRef): Promise<Vm> {
    const found = await existing(ref);
    if (!reader.isRunning(found)) throw machineStopped();
    const vm = await reader.attach(found);
    if (lifetime.due(ref.providerRef as string)) await lifetime.push(found);
    return vm;
  }
  const machine = async (ref: MachineRef) => machineOf(await running(ref));

  /** The SDK object of a machine found running, to close its browsers or a screen's server. */
  const inUse = (found: Found, ref: MachineRef) =>
    reader.readAgainBeforeUse ? running(ref) : reader.attach(found);

  async function browsersOf(found: Found, ref: MachineRef, verb: "settle" | "close"): Promise<void> {
    // a suspended machine runs no browser
    if (!reader.isRunning(found)) return;
    await machineOf(await inUse(found, ref)).browsers(verb);
  }
  const browsers = async (ref: MachineRef, verb: "settle" | "close") =>
    browsersOf(await existing(ref), ref, verb);

  const provider: SandboxProvider = {
    kind: vendor.kind,
    capabilities: { graphical: true, maxScreens, pty: false, ...egress },

    verifyAccess:
      vendor.verifyAccess ??
      (async () => {
        await reader.find(ACCESS_PROBE_ID);
      }),
    setEgress: (ref, policy) => vendor.setEgress(ref, policy),

    async provision(ref) {
      if (faults?.take("provision"))
        throw new ProviderError("PROVIDER_FAILURE", `the ${lifecycle.noun} did not come up`);
      const known = ref.providerRef === null ? null : await lifecycle.reconnect(ref.providerRef);
      const made = known ?? (await lifecycle.create(ref));
      let ready: SandboxMachine;
      try {
        ready = machineOf(await lifecycle.bringUp(made, ref, known !== null));
        await ready.installKit();
      } catch (error) {
        // a new machine nobody can use would only cost money
        if (!known) await lifecycle.remove(made).catch(() => undefined);
        throw error;
      }
      return { providerRef: ready.id, fresh: known === null };
    },

    async stop(ref) {
      const found = await existing(ref);
      if (lifecycle.isSuspended(found)) return;
      // Chromium writes its whole profile only when it is closed; a suspension would cut it mid-write.
      // An adapter that reads a machine again before use closes them as closeBrowsers does.
      await (reader.readAgainBeforeUse ? browsers(ref, "close") : browsersOf(found, ref, "close"));
      await lifecycle.suspend(found);
    },

    async destroy(ref) {
      lifecycle.forget?.(ref);
      if (ref.providerRef === null) return;
      const found = await reader.find(ref.providerRef);
      if (found !== null) await lifecycle.remove(found);
    },

    async status(ref) {
      if (ref.providerRef === null) return "missing";
      const found = await reader.find(ref.providerRef);
      if (found === null) return "missing";
      return reader.isRunning(found) ? "running" : "stopped";
    },

    // called at every use of the computer (heartbeats included), so the vendor is called at most
    // as often as the lifetime falls due
    async keepAlive(ref) {
      if (ref.providerRef === null || !lifetime.due(ref.providerRef)) return;
      const found = await existing(ref);
      if (reader.isRunning(found)) await lifetime.push(found);
    },

    async openScreen(ref, index) {
      served.requireScreen(index);
      return served.view(await running(ref), index);
    },

    async openControl(ref, index, password) {
      checkControlPassword(password);
      served.requireScreen(index);
      return served.control(await running(ref), index, password);
    },

    async closeControl(ref, index) {
      served.requireScreen(index);
      // a suspended machine runs no server: suspending it took them down
      const found = await existing(ref);
      if (!reader.isRunning(found)) return;
      await served.closeControl(await inUse(found, ref), index);
    },

    ...sandboxOperations(machine, faults),

    settleBrowsers: (ref) => browsers(ref, "settle"),
    closeBrowsers: (ref) => browsers(ref, "close"),

    async observe(ref, index) {
      served.requireScreen(index);
      return served.observe(await running(ref), index);
    },

    async act(ref, index, actions) {
      const batch = validateActions(actions);
      served.requireScreen(index);
      return served.act(await running(ref), index, batch);
    },

    // commands reach every screen the vendor's machines have
    screenEnv: (screen) => (screen < maxScreens ? screens.screenEnv(vendor.layout, screen) : null),
    launch: (ref, screen, request, options) => launchByCommand(provider, apps, ref, screen, request, options),
  };
  return provider;
}

/** A vendor's port as the screen proxy reaches it: its own URL and headers for one of the machine's ports. */
export type PortTarget<Vm> = (vm: Vm, port: number, password: string) => ScreenTarget | Promise<ScreenTarget>;

/**
 * Screens served by the kit's own servers (remote/screens.ts) on ports the vendor routes
 * browsers' traffic to (E2B, Daytona). Each screen's view server is started as needed before
 * anything else is done with the screen. `observe` and `act` say how a screen is seen and driven
 * once its view server runs, where the vendor has its own means for some screen; by default, the
 * kit's screenshot and xdotool.
 */
export function kitScreens<Vm>(options: {
  machineOf(vm: Vm): SandboxMachine;
  /** What view passwords are derived from: the vendor's API key. */
  viewSecret: string;
  target: PortTarget<Vm>;
  observe?(vm: Vm, index: number): Promise<Observation>;
  act?(vm: Vm, index: number, batch: DesktopAction[]): Promise<ActResult>;
}): ScreenServing<Vm> {
  const { machineOf, viewSecret, target } = options;
  const observe = options.observe ?? ((vm, index) => screens.observe(machineOf(vm), index));
  const act = options.act ?? ((vm, index, batch) => screens.act(machineOf(vm), index, batch));

  async function view(vm: Vm, index: number): Promise<ScreenTarget> {
    const machine = machineOf(vm);
    const password = screens.viewPassword(viewSecret, machine.id, index);
    const port = await screens.startView(machine, index, password);
    return target(vm, port, password);
  }

  return {
    requireScreen: screens.requireScreen,
    view,
    async control(vm, index, password) {
      await view(vm, index);
      const port = await screens.startControl(machineOf(vm), index, password);
      return target(vm, port, password);
    },
    closeControl: (vm, index) => screens.closeControl(machineOf(vm), index),
    async observe(vm, index) {
      await view(vm, index);
      return observe(vm, index);
    },
    async act(vm, index, batch) {
      await view(vm, index);
      return act(vm, index, batch);
    },
  };
}
