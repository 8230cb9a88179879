import type { CheckpointReason, CheckpointRetry, Computer, Database } from "@cubicle/db";
import { type Kysely, sql } from "kysely";
import { SYSTEM_ACTOR } from "../audit/audit-log.ts";
import { machineOfRecord } from "../computers/repository.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import type { Checkpoints, CheckpointsDeps } from "./checkpoints.ts";

/**
 * Checkpoints that failed (the supervisor restarting, a full disk) are tried again: one pending
 * retry per computer, backing off from RETRY_FIRST_DELAY_MS, given up after MAX_ATTEMPTS (each
 * attempt audited). A later successful checkpoint of the computer clears it.
 */

export const MAX_ATTEMPTS = 5;
const RETRY_FIRST_DELAY_MS = 15_000;
const RETRY_MAX_DELAY_MS = 10 * 60_000;

const delayAfter = (attempts: number) =>
  Math.min(RETRY_FIRST_DELAY_MS * 2 ** Math.max(0, attempts - 1), RETRY_MAX_DELAY_MS);

/** Records a failed attempt: the first schedules a retry, a later one pushes it back. */
export async function scheduleRetry(
  db: Kysely<Database>,
  computer: Computer,
  reason: CheckpointReason,
  error: string,
): Promise<void> {
  await db
    .insertInto("checkpoint_retries")
    .values({
      computer_id: computer.id,
      workspace_id: computer.workspace_id,
      reason,
      attempts: 1,
      last_error: error,
      next_attempt_at: sql<Date>`now() + make_interval(secs => ${delayAfter(1) / 1000})`,
    })
    .onConflict((oc) => oc.column("computer_id").doUpdateSet({ last_error: error }))
    .execute();
}

export async function clearRetry(db: Kysely<Database>, computerId: string): Promise<void> {
  await db.deleteFrom("checkpoint_retries").where("computer_id", "=", computerId).execute();
}

export function pendingRetry(db: Kysely<Database>, computerId: string): Promise<CheckpointRetry | undefined> {
  return db
    .selectFrom("checkpoint_retries")
    .selectAll()
    .where("computer_id", "=", computerId)
    .executeTakeFirst();
}

/** Tries due retries again; one replica at a time (its advisory lock). */
export function checkpointRetryJob(deps: CheckpointsDeps & { checkpoints: Checkpoints }): PeriodicJob {
  const db = deps.database.db;
  return {
    name: "checkpoint-retry",
    everyMs: 5_000,
    async run() {
      const due = await db
        .selectFrom("checkpoint_retries as r")
        .innerJoin("computers as c", "c.id", "r.computer_id")
        .selectAll("c")
        .select(["r.reason as retry_reason", "r.attempts as retry_attempts"])
        .where("r.next_attempt_at", "<=", sql<Date>`now()`)
        .orderBy("r.next_attempt_at")
        .limit(10)
        .execute();
      for (const { retry_reason: reason, retry_attempts: attempts, ...computer } of due) {
        const machine = await machineOfRecord(deps, computer);
        const taken = machine
          ? await deps.checkpoints
              .take({ computer, machine, actor: SYSTEM_ACTOR, reason })
              .then(() => null)
              .catch((error: unknown) =>
                (error instanceof Error ? error.message : String(error)).slice(0, 500),
              )
          : "the computer has no machine any more";
        if (taken === null) continue;
        const attempt = attempts + 1;
        if (attempt >= MAX_ATTEMPTS || !machine) {
          await db.transaction().execute(async (trx) => {
            await clearRetry(trx, computer.id);
            await deps.audit.record(
              {
                actor: SYSTEM_ACTOR,
                workspaceId: computer.workspace_id,
                action: "checkpoint.abandoned",
                target: { type: "computer", id: computer.id },
                data: { reason, attempts: attempt, error: taken },
              },
              trx,
            );
          });
          continue;
        }
        await db
          .updateTable("checkpoint_retries")
          .set({
            attempts: attempt,
            last_error: taken,
            next_attempt_at: sql<Date>`now() + make_interval(secs => ${delayAfter(attempt) / 1000})`,
          })
          .where("computer_id", "=", computer.id)
          .execute();
      }
    },
  };
}
