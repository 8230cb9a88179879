import type { DatabaseHandle } from "@cubicle/db";
import { type AuditLog, SYSTEM_ACTOR } from "../audit/audit-log.ts";
import type { Checkpoints } from "../checkpoints/checkpoints.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import { expireDue } from "./leases.ts";

/** Once a second: see sessionExpiryJob. */
export const SESSION_EXPIRY_EVERY_MS = 1_000;

/**
 * Marks expired the sessions that stopped heartbeating and frees their screens, audited as
 * `session.expired`. Opening a session does the same for its bot and computer on the spot, so
 * this sweep only makes the record (and the screens shown as in use) timely. An expired session
 * ended as a failure: its computer is checkpointed like after any session.
 */
export function sessionExpiryJob(deps: {
  database: DatabaseHandle;
  audit: AuditLog;
  checkpoints: Checkpoints;
}): PeriodicJob {
  return {
    name: "session-lease-expiry",
    everyMs: SESSION_EXPIRY_EVERY_MS,
    async run() {
      for (const lease of await expireDue(deps))
        deps.checkpoints.afterSession({
          computerId: lease.computer_id,
          outcome: "failure",
          actor: SYSTEM_ACTOR,
        });
    },
  };
}
