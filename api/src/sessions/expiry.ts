import type { AppDeps } from "../context.ts";
import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import { expireDue } from "./leases.ts";

/**
 * Marks expired the sessions that stopped heartbeating and frees their screens, audited as
 * `session.expired`. Opening a session does the same for its bot and computer on the spot, so
 * this sweep only makes the record (and the screens shown as in use) timely.
 */
export function sessionExpiryJob(deps: Pick<AppDeps, "database" | "audit">): PeriodicJob {
  return {
    name: "session-lease-expiry",
    everyMs: 1_000,
    async run() {
      await expireDue(deps);
    },
  };
}
