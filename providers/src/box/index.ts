import { ProviderError, type SandboxProvider } from "../contract/index.ts";
import { OPEN_EGRESS_ONLY, setOpenEgress } from "../kernel/egress.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import { SandboxMachine } from "../remote/machine.ts";
import { createRemoteProvider } from "../remote/provider.ts";
import * as screens from "../remote/screens.ts";
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

  /** The desktop's target, from an address asked for now: its token changes with every state change. */
  const desktop = async (box: Box) => desktopTarget(await boxes.desktopUrl(box.id));

  const provider: SandboxProvider = createRemoteProvider<Box, Box>({
    kind,
    // Nothing of the vendor's network settings is mapped yet, so only `open` is claimed, honestly;
    // mapping the policy onto the vendor's own (its network settings, where it has them) is the next step.
    capabilities: { maxScreens: BOX_MAX_SCREENS, egress: OPEN_EGRESS_ONLY },
    layout: BOX_LAYOUT,
    terminal: "x-terminal-emulator",
    machineOf,
    // a read gives the box's record, state included, and that record is what is used
    reader: {
      find: (boxId) => boxes.get(boxId),
      missing: missingMachine,
      isRunning: isRunnable,
      attach: (box) => box,
    },
    // Box counts its TTL from the last resume, not from use, so pushing it forward at every use
    // (heartbeats included) is what keeps a used box from being archived under its bot
    lifetime: {
      due: (boxId) => boxes.refreshDue(boxId),
      push: (box) => boxes.refreshTtl(box.id),
    },
    lifecycle: {
      noun: "box",
      reconnect: (boxId) => boxes.get(boxId),
      create: (ref) => boxes.create(ref),
      // waits out a change under way and resumes an archived box
      bringUp: (box) => boxes.bringUp(box),
      isSuspended: (box) => box.state === "archived",
      suspend: (box) => boxes.stop(box),
      remove: (box) => boxes.delete(box.id),
    },
    // Box serves the desktop itself (its noVNC page): no screen servers of the kit's run there
    screens: {
      requireScreen: requireBoxScreen,
      view: desktop,
      // Box's desktop has one server: the proxy, which holds the control lease's sockets, lets input
      // through only for control and closes those sockets when the lease ends
      control: desktop,
      // nothing to close at Box (the proxy ends control itself); the box was found all the same
      closeControl: async () => undefined,
      observe: (box, index) => screens.observe(machineOf(box), index),
      act: (box, index, batch) => screens.act(machineOf(box), index, batch),
    },
    setEgress: (ref, policy) => setOpenEgress(provider, ref, policy),
    faults,
  });
  return provider;
}

const missingMachine = (boxId: string | null) =>
  new ProviderError("MACHINE_MISSING", `no box ${boxId ?? "(none)"} for this home`);
