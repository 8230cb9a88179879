import type { PeriodicJob } from "../housekeeping/periodic-job.ts";
import { expireDue, type LeaseStore, revokeFormerControllers } from "./control-leases.ts";
import { type ControlServerDeps, closeControlUnlessHeld } from "./control-server.ts";

/** Four times a second: see controlExpiryJob. */
export const CONTROL_EXPIRY_EVERY_MS = 250;

/**
 * Ends control leases whose time ran out, or whose holder may no longer control the screen, and
 * stops their control servers. Four times a second: together with the proxies' event stream, a
 * control socket closes within a second of expiry. (Each lease is also claimed by exactly one
 * UPDATE; see expireDue and revokeFormerControllers.)
 */
export function controlExpiryJob(deps: LeaseStore & ControlServerDeps): PeriodicJob {
  return {
    name: "control-lease-expiry",
    everyMs: CONTROL_EXPIRY_EVERY_MS,
    async run() {
      for (const lease of [...(await expireDue(deps)), ...(await revokeFormerControllers(deps))]) {
        const computer = await deps.database.db
          .selectFrom("computers")
          .selectAll()
          .where("id", "=", lease.computer_id)
          .executeTakeFirst();
        if (computer) await closeControlUnlessHeld(deps, computer, lease.screen_index);
      }
    },
  };
}
