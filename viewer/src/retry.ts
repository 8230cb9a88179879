/**
 * Waits before each new attempt since the screen was last live. Short at first, so that a proxy
 * restart (drop, a refused attempt or two while it comes back) is live again well within 5 s.
 */
export const RETRY_WAITS_MS = [250, 500, 1_000, 2_000, 4_000] as const;
/** Consecutive attempts that never went live, after which the screen counts as refused. */
export const MAX_FAILED_ATTEMPTS = 5;

/**
 * The wait before the next attempt, or null to give up. `waits`: waits already taken since the
 * screen was last live; `failures`: attempts since then that never went live.
 */
export function nextRetryWait(waits: number, failures: number): number | null {
  if (failures >= MAX_FAILED_ATTEMPTS) return null;
  return RETRY_WAITS_MS[Math.min(waits, RETRY_WAITS_MS.length - 1)] ?? null;
}
