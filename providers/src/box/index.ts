import { type MachineRef, machineStopped, ProviderError, type SandboxProvider } from "../contract/index.ts";
import { validateActions } from "../kernel/actions.ts";
import { checkControlPassword } from "../kernel/control-password.ts";
import { OPEN_EGRESS_ONLY, setOpenEgress } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { type AppPrograms, launchByCommand } from "../kernel/launch.ts";
import { kitProgram, SandboxMachine } from "../remote/machine.ts";
import { sandboxOperations } from "../remote/operations.ts";
import * as screens from "../remote/screens.ts";
import { ACCESS_PROBE_ID } from "../remote/vendor-call.ts";
import { BOX_TTL_SECONDS, Boxes, isRunnable } from "./boxes.ts";
import { BoxClient, type BoxConnection } from "./client.ts";
import { BOX_LAYOUT, BOX_MAX_SCREENS, desktopTarget, requireBoxScreen } from "./screens.ts";
import { boxShell } from "./shell.ts";
import type { Box } from "./wire.ts";

export type { BoxConnection } from "./client.ts";

export interface BoxProviderOptions {
  /** `box-emulator` when the connection leads to the loopback emulator: only the label differs. */
  kind?: "box" | "box-emulator";
  connection: BoxConnection;
  /** How long Box keeps a box unattended; pushed forward while it is used (default 2 hours). */
  ttlSeconds?: number;
  faults?: FaultPlan;
}

/** The apps of Box's sandbox; the browser wrapper keeps its profile in the home. */
const BOX_APPS: AppPrograms = {
  browser: { program: kitProgram(BOX_LAYOUT, "browser") },
  terminal: { program: "x-terminal-emulator" },
};

/**
 * Computers as Box sandboxes ("boxes"), through Box's REST API and the adapter's own small client
 * for it. The box id is the providerRef. A box has one desktop, so a computer here has one screen:
 * on a Team Computer the first bot's session gets it and the others work without one.
 */
export function createBoxProvider({
  kind = "box",
  connection,
  ttlSeconds = BOX_TTL_SECONDS,
  faults,
}: BoxProviderOptions): SandboxProvider {
  const client = new BoxClient(connection);
  const boxes = new Boxes(client, ttlSeconds);
  const machineOf = (box: Box) => new SandboxMachine(box.id, boxShell(client, box.id), BOX_LAYOUT);

  /** The box, whatever its state; MACHINE_MISSING when Box does not have it. */
  async function existing(ref: MachineRef): Promise<Box> {
    const box = ref.providerRef === null ? null : await boxes.get(ref.providerRef);
    if (!box) throw missingMachine(ref.providerRef);
    return box;
  }

  /** A runnable box, or MACHINE_STOPPED / MACHINE_MISSING; its lifetime is pushed forward as it is used. */
  async function running(ref: MachineRef): Promise<Box> {
    const box = await existing(ref);
    if (!isRunnable(box)) throw machineStopped();
    if (boxes.refreshDue(box.id)) await boxes.refreshTtl(box.id);
    return box;
  }
  const machine = async (ref: MachineRef) => machineOf(await running(ref));

  async function browsers(ref: MachineRef, verb: "settle" | "close"): Promise<void> {
    // an archived box runs no browser
    const box = await existing(ref);
    if (isRunnable(box)) await machineOf(box).browsers(verb);
  }

  /** The desktop's target, from an address asked for now: its token changes with every state change. */
  async function openDesktop(ref: MachineRef, index: number) {
    requireBoxScreen(index);
    const box = await running(ref);
    return desktopTarget(await boxes.desktopUrl(box.id));
  }

  const provider: SandboxProvider = {
    kind,
    // Nothing of the vendor's network settings is mapped yet, so only `open` is claimed, honestly;
    // mapping the policy onto the vendor's own (its network settings, where it has them) is the next step.
    capabilities: { graphical: true, maxScreens: BOX_MAX_SCREENS, pty: false, egress: OPEN_EGRESS_ONLY },

    async verifyAccess() {
      await boxes.get(ACCESS_PROBE_ID);
    },

    setEgress: (ref, policy) => setOpenEgress(provider, ref, policy),

    async provision(ref) {
      if (faults?.take("provision")) throw new ProviderError("PROVIDER_FAILURE", "the box did not come up");
      const known = ref.providerRef === null ? null : await boxes.get(ref.providerRef);
      const created = known ?? (await boxes.create(ref));
      try {
        const box = await boxes.bringUp(created);
        await machineOf(box).installKit();
      } catch (error) {
        // a new box nobody can use would only cost money
        if (!known) await boxes.delete(created.id).catch(() => undefined);
        throw error;
      }
      return { providerRef: created.id, fresh: known === null };
    },

    async stop(ref) {
      const box = await existing(ref);
      if (box.state === "archived") return;
      // Chromium writes its whole profile only when it is closed; the archive would cut it mid-write
      if (isRunnable(box)) await machineOf(box).browsers("close");
      await boxes.stop(box);
    },

    async destroy(ref) {
      if (ref.providerRef === null) return;
      if (await boxes.get(ref.providerRef)) await boxes.delete(ref.providerRef);
    },

    async status(ref) {
      if (ref.providerRef === null) return "missing";
      const box = await boxes.get(ref.providerRef);
      if (!box) return "missing";
      return isRunnable(box) ? "running" : "stopped";
    },

    // called at every use of the computer (heartbeats included); Box counts its TTL from the last
    // resume, not from use, so this is what keeps a used box from being archived under its bot
    async keepAlive(ref) {
      if (ref.providerRef === null || !boxes.refreshDue(ref.providerRef)) return;
      const box = await existing(ref);
      if (isRunnable(box)) await boxes.refreshTtl(box.id);
    },

    openScreen: (ref, index) => openDesktop(ref, index),

    // Box's desktop has one server: the proxy, which holds the control lease's sockets, lets input
    // through only for control and closes those sockets when the lease ends
    async openControl(ref, index, password) {
      checkControlPassword(password);
      return openDesktop(ref, index);
    },

    async closeControl(ref, index) {
      requireBoxScreen(index);
      // nothing to close at Box, but the machine must be one Box has
      await existing(ref);
    },

    ...sandboxOperations(machine, faults),

    settleBrowsers: (ref) => browsers(ref, "settle"),
    closeBrowsers: (ref) => browsers(ref, "close"),

    async observe(ref, index) {
      requireBoxScreen(index);
      return screens.observe(await machine(ref), index);
    },

    async act(ref, index, actions) {
      const batch = validateActions(actions);
      requireBoxScreen(index);
      return screens.act(await machine(ref), index, batch);
    },

    screenEnv: (screen) => (screen === 0 ? screens.screenEnv(BOX_LAYOUT, screen) : null),
    launch: (ref, screen, request, options) =>
      launchByCommand(provider, BOX_APPS, ref, screen, request, options),
  };
  return provider;
}

const missingMachine = (boxId: string | null) =>
  new ProviderError("MACHINE_MISSING", `no box ${boxId ?? "(none)"} for this home`);
