import { createHash } from "node:crypto";
import type { DatabaseHandle } from "@cubicle/db";
import type { Logger } from "../observability/logger.ts";

export interface PeriodicJob {
  /** Names the job in logs and picks its advisory lock. */
  name: string;
  everyMs: number;
  run(): Promise<void>;
}

export interface RunningJob {
  stop(): Promise<void>;
}

/** A stable advisory lock key per job name, so replicas of any version agree on it. */
export function lockKeyOf(name: string): number {
  return createHash("sha256").update(`cubicle/job/${name}`).digest().readInt32BE(0);
}

/**
 * Runs a deployment-wide job every `everyMs` on whichever api replica holds its advisory lock at
 * that moment; the others skip the round. Each job has its own timer and lock, so a slow one (idle
 * suspension stopping machines) never delays a fast one (control lease expiry). Rounds never overlap.
 */
export function startPeriodicJob(
  deps: { database: DatabaseHandle; logger: Logger },
  job: PeriodicJob,
): RunningJob {
  const key = lockKeyOf(job.name);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const round = async () => {
    try {
      await deps.database.ifLockFree(key, job.run);
    } catch (error) {
      deps.logger.error({ err: error, job: job.name }, "periodic job failed; it runs again next round");
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = round().finally(schedule);
    }, job.everyMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
