import type { Computer, DatabaseHandle } from "@cubicle/db";
import type { ScreenTarget } from "@cubicle/proxy/capability";
import { machineOf } from "../computers/repository.ts";
import type { Logger } from "../observability/logger.ts";
import type { Sandbox } from "../sandbox/sandbox.ts";
import { liveLease } from "./control-leases.ts";

export interface ControlServerDeps {
  sandbox: Sandbox;
  database: DatabaseHandle;
  logger: Logger;
  /** The VNC password of a control lease's server (see control-password.ts). */
  controlPassword: (leaseId: string) => string;
}

/**
 * Starts (or keeps running) the screen's input-accepting VNC server for this lease. Idempotent
 * for one lease, because its password is derived from the lease id; another lease's password
 * replaces the server, dropping connections made under the previous lease.
 */
export async function openControlFor(
  deps: ControlServerDeps,
  computer: Computer,
  screen: number,
  leaseId: string,
): Promise<ScreenTarget> {
  const { provider, ref } = await machineOf(deps, computer);
  return provider.openControl(ref, screen, deps.controlPassword(leaseId));
}

/**
 * After a lease ended: stops the control server, so its connections drop even before the proxy
 * closes them. A lease granted meanwhile would have lost its server, so it gets it back. Never
 * throws: the lease has ended either way, and a stopped or missing machine has no server to stop.
 */
export async function closeControlUnlessHeld(
  deps: ControlServerDeps,
  computer: Computer,
  screen: number,
): Promise<void> {
  try {
    const { provider, ref } = await machineOf(deps, computer);
    await provider.closeControl(ref, screen);
    const holder = await liveLease(deps.database.db, computer.id, screen);
    if (holder) await provider.openControl(ref, screen, deps.controlPassword(holder.id));
  } catch (error) {
    deps.logger.warn(
      { err: error, computerId: computer.id, screen },
      "could not stop a screen's control server",
    );
  }
}
