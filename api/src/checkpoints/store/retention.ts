import type { RevisionInfo } from "./types.ts";

export interface RetentionPolicy {
  /** The newest this many revisions are always kept. */
  keepLast: number;
  /** For each of this many days (counted back from `now`, today included), the newest revision of that day is kept. */
  keepDailyForDays: number;
}

export const DEFAULT_RETENTION: RetentionPolicy = { keepLast: 20, keepDailyForDays: 14 };

const DAY_MS = 24 * 60 * 60 * 1000;

/** The UTC calendar day of a moment, as a number of days since the epoch. */
function utcDay(at: Date): number {
  return Math.floor(at.getTime() / DAY_MS);
}

/**
 * The revisions the policy no longer keeps (pure: no clock, no I/O). Kept: the newest `keepLast`,
 * plus the newest revision of each of the last `keepDailyForDays` UTC days (today counting as one).
 * Revisions dated in the future are kept: a clock that stepped back is no reason to delete.
 */
export function selectForRemoval<R extends Pick<RevisionInfo, "id" | "createdAt">>(
  revisions: readonly R[],
  policy: RetentionPolicy = DEFAULT_RETENTION,
  now: Date = new Date(),
): R[] {
  const newestFirst = [...revisions].sort(
    (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0),
  );
  const kept = new Set<string>();
  for (const revision of newestFirst.slice(0, Math.max(0, policy.keepLast))) kept.add(revision.id);

  const today = utcDay(now);
  const firstDay = today - Math.max(0, policy.keepDailyForDays) + 1;
  const daysSeen = new Set<number>();
  for (const revision of newestFirst) {
    if (revision.createdAt.getTime() > now.getTime()) {
      kept.add(revision.id);
      continue;
    }
    const day = utcDay(revision.createdAt);
    if (day < firstDay || day > today || daysSeen.has(day)) continue;
    daysSeen.add(day);
    kept.add(revision.id);
  }
  return newestFirst.filter((revision) => !kept.has(revision.id));
}
