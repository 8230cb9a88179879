import {
  type ActResult,
  type CommandEvent,
  type CommandRequest,
  type DesktopAction,
  type EgressPolicy,
  type EgressReport,
  type FileEntry,
  type MachineRef,
  type MachineStatus,
  type Observation,
  type ProviderCapabilities,
  ProviderError,
  type Provisioned,
  type SandboxProvider,
  type ScreenTarget,
} from "../../src/contract/index.ts";
import { DOCKER_APPS, dockerScreenEnv } from "../../src/docker/index.ts";
import { validateActions } from "../../src/kernel/actions.ts";
import { checkControlPassword } from "../../src/kernel/control-password.ts";
import { requireEnforceable } from "../../src/kernel/egress.ts";
import type { FaultPlan } from "../../src/kernel/faults.ts";
import { homeRelativePath } from "../../src/kernel/home-path.ts";
import { launchByCommand } from "../../src/kernel/launch.ts";
import { FakeEgress, registerFakeEgress } from "./egress.ts";
import { type Clock, FakeHome } from "./filesystem.ts";
import { ProcessTable } from "./processes.ts";
import { runCommand } from "./run.ts";
import { FakeScreen } from "./screen.ts";
import { extractTree, packHome } from "./tar.ts";

export interface FakeProviderOptions {
  faults?: FaultPlan;
}

const SCREENS = 8;
const VNC_BASE_PORT = 5900;
/** Control targets are never connected to; their ports only need to differ from the view ones. */
const VNC_CONTROL_BASE_PORT = 5950;
/** Timestamps come from a counter, not the wall clock, so runs are reproducible. */
const CLOCK_EPOCH_MS = Date.UTC(2025, 0, 1);

interface FakeMachine {
  providerRef: string;
  homeKey: string;
  state: "running" | "stopped";
  processes: ProcessTable;
  screens: Map<number, FakeScreen>;
  /** Screens whose control server "runs", with its password. */
  controls: Map<number, string>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * An in-memory, deterministic provider for tests: machines, homes, a tiny POSIX-sh subset and
 * synthetic screens, all in this process. Homes are keyed by home key and outlive their
 * machines, like a bind-mounted home. Never for production (buildProvider refuses it there).
 */
export function createFakeProvider(options: FakeProviderOptions = {}): SandboxProvider {
  const { faults } = options;
  const machines = new Map<string, FakeMachine>();
  const homes = new Map<string, FakeHome>();
  let machinesMade = 0;
  let ticks = 0;
  const clock: Clock = () => new Date(CLOCK_EPOCH_MS + ticks++ * 1_000);
  const egress = new FakeEgress();
  const capabilities: ProviderCapabilities = {
    graphical: true,
    maxScreens: SCREENS,
    pty: false,
    get egress() {
      return egress.levels;
    },
    get egressAllowlist() {
      return egress.allowlist;
    },
  };

  const homeOf = (homeKey: string): FakeHome => {
    let home = homes.get(homeKey);
    if (!home) {
      home = new FakeHome(clock);
      homes.set(homeKey, home);
    }
    return home;
  };

  const find = (ref: MachineRef): FakeMachine | undefined => {
    const machine = ref.providerRef === null ? undefined : machines.get(ref.providerRef);
    return machine?.homeKey === ref.homeKey ? machine : undefined;
  };

  const existing = (ref: MachineRef): FakeMachine => {
    const machine = find(ref);
    if (!machine)
      throw new ProviderError(
        "MACHINE_MISSING",
        `fake machine ${ref.providerRef ?? "(none)"} does not exist`,
      );
    return machine;
  };

  const running = (ref: MachineRef): FakeMachine => {
    const machine = existing(ref);
    if (machine.state !== "running") throw new ProviderError("MACHINE_STOPPED", "the computer is stopped");
    return machine;
  };

  const requireScreenIndex = (index: number) => {
    if (!Number.isInteger(index) || index < 0 || index >= SCREENS) {
      throw new ProviderError(
        "INVALID_SCREEN",
        `screen ${index} does not exist; this computer has screens 0 to ${SCREENS - 1}`,
      );
    }
  };

  const screenOf = (machine: FakeMachine, index: number): FakeScreen => {
    requireScreenIndex(index);
    let screen = machine.screens.get(index);
    if (!screen) {
      screen = new FakeScreen(index);
      machine.screens.set(index, screen);
    }
    return screen;
  };

  // Processes and screens live in the machine's memory, so stopping it loses them.
  const halt = (machine: FakeMachine) => {
    machine.processes.killAll();
    machine.screens.clear();
    machine.controls.clear();
  };

  const provider: SandboxProvider = {
    kind: "fake",
    capabilities,
    verifyAccess: async () => undefined,

    async provision(ref: MachineRef): Promise<Provisioned> {
      if (faults?.take("provision"))
        throw new ProviderError("PROVIDER_FAILURE", "fake machine failed to start");
      const found = find(ref);
      if (found) {
        found.state = "running";
        return { providerRef: found.providerRef, fresh: false };
      }
      const providerRef = `fake-${++machinesMade}`;
      homeOf(ref.homeKey);
      machines.set(providerRef, {
        providerRef,
        homeKey: ref.homeKey,
        state: "running",
        processes: new ProcessTable(),
        screens: new Map(),
        controls: new Map(),
      });
      return { providerRef, fresh: true };
    },

    async stop(ref: MachineRef): Promise<void> {
      const machine = existing(ref);
      if (machine.state === "stopped") return;
      halt(machine);
      machine.state = "stopped";
    },

    async destroy(ref: MachineRef): Promise<void> {
      const machine = find(ref);
      if (!machine) return;
      halt(machine);
      machines.delete(machine.providerRef);
      egress.forget(machine.providerRef);
    },

    async status(ref: MachineRef): Promise<MachineStatus> {
      return find(ref)?.state ?? "missing";
    },

    async keepAlive(ref: MachineRef): Promise<void> {
      existing(ref);
    },

    async setEgress(ref: MachineRef, policy: EgressPolicy): Promise<void> {
      requireEnforceable(capabilities, policy);
      egress.apply(existing(ref).providerRef, policy);
    },

    async egressReport(ref: MachineRef, after: string | null): Promise<EgressReport> {
      return egress.report(existing(ref).providerRef, after);
    },

    async openScreen(ref: MachineRef, index: number): Promise<ScreenTarget> {
      screenOf(running(ref), index);
      return { kind: "vnc", host: "127.0.0.1", port: VNC_BASE_PORT + index, password: "fake" };
    },

    async openControl(ref: MachineRef, index: number, password: string): Promise<ScreenTarget> {
      checkControlPassword(password);
      const machine = running(ref);
      screenOf(machine, index);
      machine.controls.set(index, password);
      return { kind: "vnc", host: "127.0.0.1", port: VNC_CONTROL_BASE_PORT + index, password };
    },

    async closeControl(ref: MachineRef, index: number): Promise<void> {
      const machine = existing(ref);
      requireScreenIndex(index);
      machine.controls.delete(index);
    },

    async *run(ref: MachineRef, request: CommandRequest): AsyncGenerator<CommandEvent> {
      const machine = running(ref);
      const home = homeOf(machine.homeKey);
      const cwd = homeRelativePath(request.cwd ?? "");
      const where = home.lookup(cwd);
      if (!where) throw new ProviderError("FILE_NOT_FOUND", `no such folder: ${cwd}`);
      if (where.kind !== "directory") throw new ProviderError("NOT_A_DIRECTORY", `not a folder: ${cwd}`);
      const homeDir = `/home/${machine.homeKey}`;
      yield* runCommand({
        machine: { home, homeDir, processes: machine.processes },
        command: request.command,
        cwd,
        vars: { ...request.env, HOME: homeDir },
        timeoutMs: request.timeoutMs,
        signal: request.signal,
        maxOutputBytes: request.maxOutputBytes,
      });
    },

    async listFiles(ref: MachineRef, path: string): Promise<FileEntry[]> {
      return homeOf(existing(ref).homeKey).list(path);
    },

    async readFile(ref: MachineRef, path: string, { maxBytes }: { maxBytes: number }): Promise<Uint8Array> {
      return homeOf(existing(ref).homeKey).read(path, maxBytes);
    },

    async writeFile(
      ref: MachineRef,
      path: string,
      data: Uint8Array,
      writeOptions?: { executable?: boolean },
    ): Promise<void> {
      homeOf(existing(ref).homeKey).write(path, data, writeOptions?.executable ?? false);
    },

    async deleteFile(ref: MachineRef, path: string): Promise<void> {
      homeOf(existing(ref).homeKey).delete(path);
    },

    async exportHome(ref: MachineRef): Promise<ReadableStream<Uint8Array>> {
      const entries = homeOf(existing(ref).homeKey).walk();
      return packHome(entries, faults?.take("export") ?? false);
    },

    async importHome(ref: MachineRef, tar: ReadableStream<Uint8Array>): Promise<void> {
      const home = homeOf(existing(ref).homeKey);
      const root = await extractTree(tar, clock, faults?.take("import") ?? false);
      home.replaceRoot(root);
    },

    // The fake runs no browsers: there is nothing to wait for or to close.
    async settleBrowsers(ref: MachineRef): Promise<void> {
      existing(ref);
    },

    async closeBrowsers(ref: MachineRef): Promise<void> {
      existing(ref);
    },

    async observe(ref: MachineRef, screen: number): Promise<Observation> {
      return screenOf(running(ref), screen).observe();
    },

    async act(ref: MachineRef, screen: number, actions: DesktopAction[]): Promise<ActResult> {
      const machine = running(ref);
      const target = screenOf(machine, screen);
      const batch = validateActions(actions);
      let completed = 0;
      for (const action of batch) {
        if (machine.state !== "running" || !machines.has(machine.providerRef)) {
          return { completed, total: batch.length, error: "the computer stopped while acting" };
        }
        if (action.type === "wait") await sleep(action.ms);
        else target.apply(action);
        completed++;
      }
      return { completed, total: batch.length };
    },

    // the fake numbers its screens' displays as the Docker computer does, and has no programs
    // (its shell knows no `command -v`), so a launch reports APP_LAUNCH_FAILED as a machine without them would
    screenEnv: (screen) => dockerScreenEnv(screen),
    launch: (ref, screen, request, options) =>
      launchByCommand(provider, DOCKER_APPS, ref, screen, request, options),
  };
  registerFakeEgress(provider, egress);
  return provider;
}
