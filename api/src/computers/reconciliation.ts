import type { ApiEnv } from "../config/env.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import type { Logger } from "../observability/logger.ts";
import { type ComputerDeps, reconcileComputer } from "./lifecycle.ts";

/**
 * Asks the provider, every SANDBOX_RECONCILE_MS, about each computer whose record says `running`,
 * and marks the ones it no longer runs `stopped` (see reconcileComputer): a computer killed or
 * crashed outside Cubicle otherwise shows `running` until someone uses it. One replica at a time
 * runs it (its advisory lock).
 */
export function reconciliationJob(deps: ComputerDeps & { env: ApiEnv; logger: Logger }): PeriodicJob {
  return {
    name: "computer-reconciliation",
    everyMs: deps.env.sandbox.reconcileMs,
    async run() {
      const running = await deps.database.db
        .selectFrom("computers")
        .selectAll()
        .where("state", "=", "running")
        .execute();
      for (const computer of running) {
        try {
          await reconcileComputer(deps, computer);
        } catch (error) {
          // a provider that does not answer now is asked again next round; the others get their turn
          deps.logger.warn(
            { err: error, computerId: computer.id },
            "could not reconcile a computer with its provider",
          );
        }
      }
    },
  };
}
