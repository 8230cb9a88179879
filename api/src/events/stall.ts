/** How long events may wait to settle before a stream says why in the log. */
export const STALL_WARN_MS = 30_000;

/**
 * Tells a stream when its events have waited to settle for longer than `afterMs`, once per stall.
 * Events wait for every older transaction on the whole Postgres server to end (feed.ts); a stall is
 * one oldest running transaction (the horizon) holding them back read after read. It ends when
 * that transaction does, or when nothing waits any more.
 */
export class StallWatch {
  private horizon: string | undefined;
  private since = 0;
  private warned = false;

  constructor(
    private readonly afterMs = STALL_WARN_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * After each read: the horizon its unsettled events wait for, or undefined when none wait.
   * Returns how long they have waited when that is the time to warn, else undefined.
   */
  check(horizon: string | undefined): number | undefined {
    const now = this.now();
    if (horizon !== this.horizon) {
      this.horizon = horizon;
      this.since = now;
      this.warned = false;
    }
    if (horizon === undefined || this.warned || now - this.since < this.afterMs) return undefined;
    this.warned = true;
    return now - this.since;
  }
}
