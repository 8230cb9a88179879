import type { Sandbox } from "@e2b/desktop";
import { DEFAULT_EGRESS, type EgressPolicy, MAX_SCREENS, type SandboxProvider } from "../contract/index.ts";
import { ALL_EGRESS_LEVELS, requireEnforceable } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { SandboxMachine } from "../remote/machine.ts";
import { createRemoteProvider, existingMachine, kitScreens, type MachineReader } from "../remote/provider.ts";
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

/** What reading a sandbox gives: only its state, since E2B's SDK object comes with a connect. */
interface E2bFound {
  sandboxId: string;
  state: "running" | "paused";
}

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

  const reader: MachineReader<E2bFound, Sandbox> = {
    async find(sandboxId) {
      const state = await sandboxes.state(sandboxId);
      return state === "missing" ? null : { sandboxId, state };
    },
    missing: missingMachine,
    isRunning: ({ state }) => state === "running",
    attach: ({ sandboxId }) => sandboxes.attach(sandboxId),
    readAgainBeforeUse: true,
  };

  const provider = createRemoteProvider<E2bFound, Sandbox>({
    kind,
    // every level, through E2B's own network settings (egress.ts); allowlists without ports
    capabilities: { maxScreens: MAX_SCREENS, egress: ALL_EGRESS_LEVELS, egressAllowlist: E2B_ALLOWLIST },
    layout: E2B_LAYOUT,
    terminal: "x-terminal-emulator",
    machineOf,
    reader,
    // pushed at most once a minute, so E2B never pauses a computer that Cubicle considers active
    lifetime: {
      due: (sandboxId) => sandboxes.keepAliveDue(sandboxId),
      push: ({ sandboxId }) => sandboxes.keepAlive(sandboxId),
    },
    lifecycle: {
      noun: "sandbox",
      // connecting is how E2B resumes a paused sandbox
      reconnect: (sandboxId) => sandboxes.connect(sandboxId),
      create: (ref) => sandboxes.create(ref, e2bNetworkOf(policies.get(ref.homeKey) ?? DEFAULT_EGRESS)),
      // a resumed sandbox is given its home's policy again; a new one was made with it
      async bringUp(sandbox, ref, reconnected) {
        const policy = policies.get(ref.homeKey);
        if (reconnected && policy) await sandboxes.updateNetwork(sandbox.sandboxId, e2bNetworkOf(policy));
        return sandbox;
      },
      isSuspended: ({ state }) => state === "paused",
      suspend: ({ sandboxId }) => sandboxes.pause(sandboxId),
      remove: ({ sandboxId }) => sandboxes.kill(sandboxId),
      forget: (ref) => policies.delete(ref.homeKey),
    },
    screens: kitScreens({
      machineOf,
      viewSecret: connection.apiKey,
      target: (sandbox, port, password) => portTarget(connection, sandbox, port, password),
    }),
    verifyAccess: () => sandboxes.verifyAccess(),
    async setEgress(ref, policy) {
      requireEnforceable(provider.capabilities, policy);
      const network = e2bNetworkOf(policy);
      const { sandboxId, state } = await existingMachine(reader, ref);
      policies.set(ref.homeKey, policy);
      if (state === "running") await sandboxes.updateNetwork(sandboxId, network);
    },
    faults,
  });
  return provider;
}
