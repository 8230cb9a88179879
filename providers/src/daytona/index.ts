import type { Sandbox } from "@daytonaio/sdk";
import {
  MAX_SCREENS,
  type MachineRef,
  machineStopped,
  ProviderError,
  type SandboxProvider,
  type ScreenTarget,
} from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import { requireEnforceable } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { failure, kitProgram, SandboxMachine } from "../remote/machine.ts";
import { sandboxOperations } from "../remote/operations.ts";
import * as screens from "../remote/screens.ts";
import { ACCESS_PROBE_ID } from "../remote/vendor-call.ts";
import { DAYTONA_EGRESS, DAYTONA_EGRESS_ALLOWLIST, networkSettingsOf } from "./egress.ts";
import { type DaytonaConnection, missingMachine, Sandboxes } from "./sandboxes.ts";
import {
  actComputerUse,
  computerUseSteps,
  DAYTONA_LAYOUT,
  observeComputerUse,
  previewTarget,
  startComputerUse,
} from "./screens.ts";
import { daytonaShell } from "./shell.ts";

export type { DaytonaConnection } from "./sandboxes.ts";

/**
 * After a stop the disk is kept but no process is, and pids start low again: the pid files the
 * kit's screen servers left in its run folder would name whatever new process now has their pid
 * (which `screen view` would take for its old server and kill, a helper command as likely as not).
 * The folder is a boot's state, so it goes at every start.
 */
async function forgetRunState(machine: SandboxMachine): Promise<void> {
  const result = await machine.exec('rm -rf -- "$CUBICLE_RUN_DIR"', { timeoutMs: 30_000 });
  if (result.exitCode !== 0) throw failure("forgetting the stopped sandbox's processes", result);
}

export interface DaytonaProviderOptions {
  /** `daytona-emulator` when the connection leads to the loopback emulator: only the label differs. */
  kind?: "daytona" | "daytona-emulator";
  connection: DaytonaConnection;
  faults?: FaultPlan;
}

/** The apps of Daytona's default sandbox; the browser wrapper keeps its profile in the home. */
const DAYTONA_APPS: AppPrograms = {
  browser: { program: kitProgram(DAYTONA_LAYOUT, "browser") },
  terminal: { program: "xfce4-terminal" },
};

/**
 * Computers as Daytona sandboxes, through the real `@daytonaio/sdk`. The sandbox id is the
 * providerRef. The SDK is all this knows of Daytona: pointed elsewhere by its own settings (an
 * emulator on loopback, say), it behaves the same.
 */
export function createDaytonaProvider({
  kind = "daytona",
  connection,
  faults,
}: DaytonaProviderOptions): SandboxProvider {
  const sandboxes = new Sandboxes(connection);
  const machineOf = (sandbox: Sandbox) =>
    new SandboxMachine(sandbox.id, daytonaShell(sandbox), DAYTONA_LAYOUT);

  /** The sandbox, whatever its state; MACHINE_MISSING when Daytona does not have it. */
  async function existing(ref: MachineRef): Promise<Sandbox> {
    const sandbox = ref.providerRef === null ? null : await sandboxes.get(ref.providerRef);
    if (!sandbox) throw missingMachine(ref.providerRef);
    return sandbox;
  }

  /** A started sandbox, or MACHINE_STOPPED / MACHINE_MISSING; its use is reported (once a minute). */
  async function running(ref: MachineRef): Promise<Sandbox> {
    const sandbox = await existing(ref);
    if (sandbox.state !== "started") throw machineStopped();
    if (sandboxes.activityDue(sandbox.id)) await sandboxes.reportActivity(sandbox);
    return sandbox;
  }
  const machine = async (ref: MachineRef) => machineOf(await running(ref));

  async function browsers(ref: MachineRef, verb: "settle" | "close"): Promise<void> {
    // a stopped sandbox runs no browser
    const sandbox = await existing(ref);
    if (sandbox.state !== "started") return;
    await machineOf(sandbox).browsers(verb);
  }

  /** The screen's view server (started as needed) and its target. */
  async function openView(sandbox: Sandbox, index: number): Promise<ScreenTarget> {
    const password = screens.viewPassword(connection.apiKey, sandbox.id, index);
    const port = await screens.startView(machineOf(sandbox), index, password);
    return previewTarget(sandbox, port, password);
  }

  const provider: SandboxProvider = {
    kind,
    capabilities: {
      graphical: true,
      maxScreens: MAX_SCREENS,
      pty: false,
      egress: DAYTONA_EGRESS,
      egressAllowlist: DAYTONA_EGRESS_ALLOWLIST,
    },

    async verifyAccess() {
      await sandboxes.get(ACCESS_PROBE_ID);
    },

    // Daytona keeps the settings with the sandbox and applies them at once to a started one; they
    // are given again at every start (provision), where its runner does not restore them
    async setEgress(ref, policy) {
      requireEnforceable(provider.capabilities, policy);
      const settings = networkSettingsOf(policy);
      await sandboxes.setNetwork(await existing(ref), settings);
    },

    async provision(ref) {
      if (faults?.take("provision"))
        throw new ProviderError("PROVIDER_FAILURE", "the sandbox did not come up");
      const known = ref.providerRef === null ? null : await sandboxes.get(ref.providerRef);
      const sandbox = known ?? (await sandboxes.create(ref));
      try {
        const booting = sandbox.state !== "started";
        await sandboxes.start(sandbox);
        // before anything runs that could reach out
        if (booting) await sandboxes.restoreNetwork(sandbox);
        const machine = machineOf(sandbox);
        if (booting) await forgetRunState(machine);
        // desktop processes do not survive a stop
        await startComputerUse(sandbox);
        await machine.installKit();
      } catch (error) {
        // a new sandbox nobody can use would only cost money
        if (!known) await sandboxes.delete(sandbox).catch(() => undefined);
        throw error;
      }
      return { providerRef: sandbox.id, fresh: known === null };
    },

    async stop(ref) {
      const sandbox = await existing(ref);
      if (sandbox.state === "stopped" || sandbox.state === "archived") return;
      // Chromium writes its whole profile only when it is closed; a stop would cut it mid-write
      if (sandbox.state === "started") await machineOf(sandbox).browsers("close");
      // the preview tokens the screens were opened with die with the stop: Daytona issues new ones
      // at the next start, and Cubicle never stored the old ones
      await sandboxes.stop(sandbox);
    },

    async destroy(ref) {
      if (ref.providerRef === null) return;
      const sandbox = await sandboxes.get(ref.providerRef);
      if (sandbox) await sandboxes.delete(sandbox);
    },

    async status(ref) {
      if (ref.providerRef === null) return "missing";
      const state = await sandboxes.state(ref.providerRef);
      return state === "started" ? "running" : state;
    },

    // called at every use of the computer (heartbeats included), so at most once a minute
    async keepAlive(ref) {
      if (ref.providerRef === null || !sandboxes.activityDue(ref.providerRef)) return;
      const sandbox = await existing(ref);
      if (sandbox.state === "started") await sandboxes.reportActivity(sandbox);
    },

    async openScreen(ref, index) {
      screens.requireScreen(index);
      return openView(await running(ref), index);
    },

    async openControl(ref, index, password) {
      checkControlPassword(password);
      screens.requireScreen(index);
      const sandbox = await running(ref);
      await openView(sandbox, index);
      const port = await screens.startControl(machineOf(sandbox), index, password);
      return previewTarget(sandbox, port, password);
    },

    async closeControl(ref, index) {
      screens.requireScreen(index);
      // a stopped sandbox runs no server: stopping took them down
      const sandbox = await existing(ref);
      if (sandbox.state !== "started") return;
      await screens.closeControl(machineOf(sandbox), index);
    },

    ...sandboxOperations(machine, faults),

    settleBrowsers: (ref) => browsers(ref, "settle"),
    closeBrowsers: (ref) => browsers(ref, "close"),

    async observe(ref, index) {
      screens.requireScreen(index);
      const sandbox = await running(ref);
      await openView(sandbox, index);
      // computer use sees only its own display
      return index === 0 ? observeComputerUse(sandbox) : screens.observe(machineOf(sandbox), index);
    },

    async act(ref, index, actions) {
      const batch = validateActions(actions);
      screens.requireScreen(index);
      const sandbox = await running(ref);
      await openView(sandbox, index);
      const steps = index === 0 ? computerUseSteps(batch) : null;
      return steps ? actComputerUse(sandbox, batch, steps) : screens.act(machineOf(sandbox), index, batch);
    },

    screenEnv: (screen) => screens.screenEnv(DAYTONA_LAYOUT, screen),
    launch: (ref, screen, request, options) =>
      launchByCommand(provider, DAYTONA_APPS, ref, screen, request, options),
  };
  return provider;
}
