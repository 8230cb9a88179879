import { sql } from "kysely";
import { SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { AppDeps } from "../context.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import { type ComputerDeps, stopComputer } from "./lifecycle.ts";

/**
 * Stops computers nobody has used for SANDBOX_IDLE_MS: no open session, no held screen or control,
 * and no activity (tool calls, session heartbeats, screen sockets reported by the proxies,
 * dashboard heartbeats all touch `last_activity_at`). They end `suspended` and resume on next use.
 * One replica at a time runs it (its advisory lock), so each suspension happens, and is audited, once.
 */
export function idleSuspensionJob(deps: ComputerDeps & Pick<AppDeps, "env" | "logger">): PeriodicJob {
  const idleSeconds = deps.env.sandbox.idleMs / 1000;
  return {
    name: "idle-suspension",
    everyMs: 1_000,
    async run() {
      const idle = await deps.database.db
        .selectFrom("computers as c")
        .selectAll("c")
        .where("c.state", "=", "running")
        .where(
          sql<boolean>`coalesce(c.last_activity_at, c.updated_at) < now() - make_interval(secs => ${idleSeconds})`,
        )
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("execution_leases as e")
                .select("e.id")
                .whereRef("e.computer_id", "=", "c.id")
                .where("e.status", "=", "open")
                .where("e.expires_at", ">", sql<Date>`now()`),
            ),
          ),
        )
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom("control_leases as l")
                .select("l.id")
                .whereRef("l.computer_id", "=", "c.id")
                .where("l.released_at", "is", null),
            ),
          ),
        )
        .execute();
      for (const computer of idle) {
        try {
          await stopComputer(deps, computer, SYSTEM_ACTOR, "idle");
        } catch (error) {
          // recorded as computer.stop_failed by the lifecycle; the others still get their turn
          deps.logger.warn({ err: error, computerId: computer.id }, "could not suspend an idle computer");
        }
      }
    },
  };
}
