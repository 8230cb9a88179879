import type { Sandbox } from "@daytonaio/sdk";
import { MAX_SCREENS, type SandboxProvider } from "../contract/index.ts";
import { requireEnforceable } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { failure, SandboxMachine } from "../remote/machine.ts";
import { createRemoteProvider, existingMachine, kitScreens, type MachineReader } from "../remote/provider.ts";
import * as screens from "../remote/screens.ts";
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

  // a read gives the SDK object, state included, and that object is what is used
  const reader: MachineReader<Sandbox, Sandbox> = {
    find: (sandboxId) => sandboxes.get(sandboxId),
    missing: missingMachine,
    isRunning: (sandbox) => sandbox.state === "started",
    attach: (sandbox) => sandbox,
  };

  const provider = createRemoteProvider<Sandbox, Sandbox>({
    kind,
    capabilities: {
      maxScreens: MAX_SCREENS,
      egress: DAYTONA_EGRESS,
      egressAllowlist: DAYTONA_EGRESS_ALLOWLIST,
    },
    layout: DAYTONA_LAYOUT,
    terminal: "xfce4-terminal",
    machineOf,
    reader,
    // its use is reported, at most once a minute
    lifetime: {
      due: (sandboxId) => sandboxes.activityDue(sandboxId),
      push: (sandbox) => sandboxes.reportActivity(sandbox),
    },
    lifecycle: {
      noun: "sandbox",
      reconnect: (sandboxId) => sandboxes.get(sandboxId),
      create: (ref) => sandboxes.create(ref),
      async bringUp(sandbox) {
        const booting = sandbox.state !== "started";
        await sandboxes.start(sandbox);
        // before anything runs that could reach out
        if (booting) await sandboxes.restoreNetwork(sandbox);
        if (booting) await forgetRunState(machineOf(sandbox));
        // desktop processes do not survive a stop
        await startComputerUse(sandbox);
        return sandbox;
      },
      isSuspended: (sandbox) => sandbox.state === "stopped" || sandbox.state === "archived",
      // the preview tokens the screens were opened with die with the stop: Daytona issues new ones
      // at the next start, and Cubicle never stored the old ones
      suspend: (sandbox) => sandboxes.stop(sandbox),
      remove: (sandbox) => sandboxes.delete(sandbox),
    },
    screens: kitScreens({
      machineOf,
      viewSecret: connection.apiKey,
      target: previewTarget,
      // computer use sees only its own display, screen 0, and drives it where it can
      observe: (sandbox, index) =>
        index === 0 ? observeComputerUse(sandbox) : screens.observe(machineOf(sandbox), index),
      act(sandbox, index, batch) {
        const steps = index === 0 ? computerUseSteps(batch) : null;
        return steps ? actComputerUse(sandbox, batch, steps) : screens.act(machineOf(sandbox), index, batch);
      },
    }),
    // Daytona keeps the settings with the sandbox and applies them at once to a started one; they
    // are given again at every start (provision), where its runner does not restore them
    async setEgress(ref, policy) {
      requireEnforceable(provider.capabilities, policy);
      const settings = networkSettingsOf(policy);
      await sandboxes.setNetwork(await existingMachine(reader, ref), settings);
    },
    faults,
  });
  return provider;
}
