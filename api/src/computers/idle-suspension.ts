import { sql } from "kysely";
import { SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { ApiEnv } from "../config/env.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import type { Logger } from "../observability/logger.ts";
import { type ComputerDeps, type Condition, stopComputer } from "./lifecycle.ts";

/**
 * Stops computers nobody has used for SANDBOX_IDLE_MS: no open session, no held screen or control,
 * and no activity (tool calls, session heartbeats, screen sockets reported by the proxies,
 * dashboard heartbeats all touch `last_activity_at`). They end `suspended` and resume on next use.
 * One replica at a time runs it (its advisory lock), so each suspension happens, and is audited, once.
 */
export function idleSuspensionJob(deps: ComputerDeps & { env: ApiEnv; logger: Logger }): PeriodicJob {
  const idle = idleFor(deps.env.sandbox.idleMs / 1000);
  return {
    name: "idle-suspension",
    everyMs: 1_000,
    async run() {
      const candidates = await deps.database.db
        .selectFrom("computers")
        .selectAll()
        .where("state", "=", "running")
        .where(idle)
        .execute();
      for (const computer of candidates) {
        try {
          // still idle when it is claimed: a use that arrived since is not suspended
          await stopComputer(deps, computer, SYSTEM_ACTOR, "idle", { onlyIf: idle });
        } catch (error) {
          // recorded as computer.stop_failed by the lifecycle; the others still get their turn
          deps.logger.warn({ err: error, computerId: computer.id }, "could not suspend an idle computer");
        }
      }
    },
  };
}

/** Nobody has used the computer for `idleSeconds`: no activity, no open session, no control. */
export function idleFor(idleSeconds: number): Condition {
  return sql<boolean>`(
    coalesce(computers.last_activity_at, computers.updated_at) < now() - make_interval(secs => ${idleSeconds})
    and not exists (
      select 1 from execution_leases e
      where e.computer_id = computers.id and e.status = 'open' and e.expires_at > now()
    )
    and not exists (
      select 1 from control_leases l where l.computer_id = computers.id and l.released_at is null
    )
  )`;
}
