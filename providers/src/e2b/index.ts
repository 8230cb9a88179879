import type { Sandbox } from "@e2b/desktop";
import {
  DEFAULT_EGRESS,
  type EgressPolicy,
  MAX_SCREENS,
  type MachineRef,
  ProviderError,
  type SandboxProvider,
  type ScreenTarget,
} from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import { ALL_EGRESS_LEVELS, requireEnforceable } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { kitProgram, SandboxMachine } from "../remote/machine.ts";
import { sandboxOperations } from "../remote/operations.ts";
import * as screens from "../remote/screens.ts";
import { E2B_ALLOWLIST, e2bNetworkOf } from "./egress.ts";
import { type E2bConnection, missingMachine, Sandboxes } from "./sandboxes.ts";
import { E2B_LAYOUT, portTarget } from "./screens.ts";
import { e2bShell } from "./shell.ts";

export type { E2bConnection } from "./sandboxes.ts";

export interface E2bProviderOptions {
  /** `e2b-emulator` when the connection leads to the loopback emulator: only the label differs. */
  kind?: "e2b" | "e2b-emulator";
  connection: E2bConnection;
  /**
   * How long E2B keeps an unused sandbox before pausing it by itself; pushed forward while the
   * computer is used. Longer than Cubicle's idle window, so Cubicle's own idle job (which takes a
   * checkpoint first) is what normally suspends a computer.
   */
  sandboxLifetimeMs: number;
  faults?: FaultPlan;
}

/** The apps of E2B's desktop template; the browser wrapper keeps its profile in the home. */
const E2B_APPS: AppPrograms = {
  browser: { program: kitProgram(E2B_LAYOUT, "browser") },
  terminal: { program: "x-terminal-emulator" },
};

/**
 * Computers as E2B desktop sandboxes, through the real `@e2b/desktop` SDK. The sandbox id is the
 * providerRef. The SDK is all this knows of E2B: pointed elsewhere by its own settings (an
 * emulator on loopback, say), it behaves the same.
 */
export function createE2bProvider({
  kind = "e2b",
  connection,
  sandboxLifetimeMs,
  faults,
}: E2bProviderOptions): SandboxProvider {
  const sandboxes = new Sandboxes(connection, sandboxLifetimeMs);
  /**
   * The policy last set for each home: a new sandbox is made with it, and a resumed one is given it
   * again (one set while paused waits for the resume: E2B changes only a running sandbox's). The
   * api applies the computer's policy after every provision too, so a restart losing this is safe.
   */
  const policies = new Map<string, EgressPolicy>();

  const machineOf = (sandbox: Sandbox) =>
    new SandboxMachine(sandbox.sandboxId, e2bShell(sandbox), E2B_LAYOUT);
  const running = (ref: MachineRef) => {
    if (ref.providerRef === null) throw missingMachine(null);
    return sandboxes.running(ref.providerRef);
  };
  const machine = async (ref: MachineRef) => machineOf(await running(ref));

  /** The sandbox's state; MACHINE_MISSING when E2B does not have it. */
  async function existing(ref: MachineRef): Promise<"running" | "paused"> {
    const state = ref.providerRef === null ? "missing" : await sandboxes.state(ref.providerRef);
    if (state === "missing") throw missingMachine(ref.providerRef);
    return state;
  }

  async function browsers(ref: MachineRef, verb: "settle" | "close"): Promise<void> {
    // a paused sandbox runs no browser
    if ((await existing(ref)) === "paused") return;
    await (await machine(ref)).browsers(verb);
  }

  /** The screen's view server (started as needed) and its target. */
  async function openView(sandbox: Sandbox, index: number): Promise<ScreenTarget> {
    const password = screens.viewPassword(connection.apiKey, sandbox.sandboxId, index);
    const port = await screens.startView(machineOf(sandbox), index, password);
    return portTarget(connection, sandbox, port, password);
  }

  const provider: SandboxProvider = {
    kind,
    // every level, through E2B's own network settings (egress.ts); allowlists without ports
    capabilities: {
      graphical: true,
      maxScreens: MAX_SCREENS,
      pty: false,
      egress: ALL_EGRESS_LEVELS,
      egressAllowlist: E2B_ALLOWLIST,
    },

    verifyAccess: () => sandboxes.verifyAccess(),

    async setEgress(ref, policy) {
      requireEnforceable(provider.capabilities, policy);
      const network = e2bNetworkOf(policy);
      const state = await existing(ref);
      policies.set(ref.homeKey, policy);
      if (state === "running") await sandboxes.updateNetwork(ref.providerRef as string, network);
    },

    async provision(ref) {
      if (faults?.take("provision"))
        throw new ProviderError("PROVIDER_FAILURE", "the sandbox did not come up");
      const known = ref.providerRef === null ? null : await sandboxes.connect(ref.providerRef);
      const policy = policies.get(ref.homeKey);
      const sandbox = known ?? (await sandboxes.create(ref, e2bNetworkOf(policy ?? DEFAULT_EGRESS)));
      try {
        if (known && policy) await sandboxes.updateNetwork(known.sandboxId, e2bNetworkOf(policy));
        await machineOf(sandbox).installKit();
      } catch (error) {
        // a new sandbox nobody can use would only cost money
        if (!known) await sandboxes.kill(sandbox.sandboxId).catch(() => undefined);
        throw error;
      }
      return { providerRef: sandbox.sandboxId, fresh: known === null };
    },

    async stop(ref) {
      if ((await existing(ref)) === "paused") return;
      // Chromium writes its whole profile only when it is closed; a pause would freeze it mid-write
      await browsers(ref, "close");
      await sandboxes.pause(ref.providerRef as string);
    },

    async destroy(ref) {
      policies.delete(ref.homeKey);
      if (ref.providerRef === null) return;
      if ((await sandboxes.state(ref.providerRef)) !== "missing") await sandboxes.kill(ref.providerRef);
    },

    async status(ref) {
      if (ref.providerRef === null) return "missing";
      const state = await sandboxes.state(ref.providerRef);
      return state === "paused" ? "stopped" : state;
    },

    // called at every use of the computer (heartbeats included), so at most once a minute
    async keepAlive(ref) {
      if (ref.providerRef === null || !sandboxes.keepAliveDue(ref.providerRef)) return;
      if ((await existing(ref)) === "running") await sandboxes.keepAlive(ref.providerRef);
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
      return portTarget(connection, sandbox, port, password);
    },

    async closeControl(ref, index) {
      screens.requireScreen(index);
      // a paused sandbox's servers are frozen with it and never answer again: stopping took them down
      if ((await existing(ref)) === "paused") return;
      await screens.closeControl(await machine(ref), index);
    },

    ...sandboxOperations(machine, faults),

    settleBrowsers: (ref) => browsers(ref, "settle"),
    closeBrowsers: (ref) => browsers(ref, "close"),

    async observe(ref, index) {
      screens.requireScreen(index);
      const sandbox = await running(ref);
      await openView(sandbox, index);
      return screens.observe(machineOf(sandbox), index);
    },

    async act(ref, index, actions) {
      const batch = validateActions(actions);
      screens.requireScreen(index);
      const sandbox = await running(ref);
      await openView(sandbox, index);
      return screens.act(machineOf(sandbox), index, batch);
    },

    screenEnv: (screen) => screens.screenEnv(E2B_LAYOUT, screen),
    launch: (ref, screen, request, options) =>
      launchByCommand(provider, E2B_APPS, ref, screen, request, options),
  };
  return provider;
}
