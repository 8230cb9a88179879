import type { AppDeps } from "../context.ts";
import { pruneRedemptions } from "../internal/redemptions.ts";
import { expireDue } from "./control-leases.ts";
import { closeControlUnlessHeld } from "./control-server.ts";

// Four times a second: together with the proxies' event stream, a control socket closes within
// a second of its lease running out.
const TICK_MS = 250;
// Redemption rows only matter for a minute; pruning them now and then is plenty.
const PRUNE_EVERY_MS = 60_000;

export interface ExpiryLoop {
  stop(): Promise<void>;
}

/**
 * Ends control leases whose time ran out and stops their control servers. Safe to run on every api
 * replica at once: each expired lease is claimed by exactly one UPDATE (see expireDue).
 */
export function startExpiryLoop(deps: AppDeps): ExpiryLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let lastPrune = 0;

  const tick = async () => {
    try {
      const expired = await expireDue(deps);
      for (const lease of expired) {
        const computer = await deps.database.db
          .selectFrom("computers")
          .selectAll()
          .where("id", "=", lease.computer_id)
          .executeTakeFirst();
        if (computer) await closeControlUnlessHeld(deps, computer, lease.screen_index);
      }
      if (Date.now() - lastPrune >= PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        await pruneRedemptions(deps.database.db);
      }
    } catch (error) {
      deps.logger.error({ err: error }, "control lease expiry failed; retrying");
    }
  };
  // Each tick is scheduled after the previous one finished, so ticks never overlap.
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(schedule);
    }, TICK_MS);
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
