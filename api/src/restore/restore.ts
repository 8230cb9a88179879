import type { Checkpoint, Computer } from "@cubicle/db";
import type { AuditActor } from "../audit/audit-log.ts";
import type { Checkpoints, RestoreTarget } from "../checkpoints/checkpoints.ts";
import { type ComputerDeps, destroyComputer, ensureRunning } from "../computers/lifecycle.ts";
import { computerBusy } from "../computers/occupancy.ts";
import { machineOfRecord } from "../computers/repository.ts";

/**
 * Puts a revision back, into the running machine or into a fresh machine made for it. It sits
 * above both the lifecycle (which starts and replaces machines) and the checkpoints (which read
 * and write homes), so that neither calls the other back: the lifecycle only reaches checkpoints
 * through its MachineCheckpoints seam. Refused while sessions use the computer.
 */
export async function restoreRevision(
  deps: ComputerDeps & { checkpoints: Checkpoints },
  computer: Computer,
  checkpoint: Checkpoint,
  into: RestoreTarget,
  actor: AuditActor,
): Promise<Computer> {
  const busy = await computerBusy(deps.database.db, computer.id);
  if (busy) throw busy;
  if (into === "current") {
    const running = await ensureRunning(deps, computer, actor);
    await deps.checkpoints.restoreInto({ ...running, actor }, checkpoint);
    return running.computer;
  }
  const machine = await machineOfRecord(deps, computer);
  if (machine && (await machine.provider.status(machine.ref)) !== "missing") {
    await deps.checkpoints.keepBeforeRestore({ computer, machine, actor });
  }
  const destroyed = await destroyComputer(deps, computer, actor, { checkpointed: true });
  const { computer: restored } = await ensureRunning(deps, destroyed, actor, {
    restoreRevisionId: checkpoint.id,
  });
  return restored;
}
