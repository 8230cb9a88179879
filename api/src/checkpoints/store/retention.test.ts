import { describe, expect, it } from "vitest";
import { DEFAULT_RETENTION, selectForRemoval } from "./retention.ts";
import type { RevisionInfo } from "./types.ts";

const HOUR = 60 * 60 * 1000;
const now = new Date("2026-11-29T15:00:00.000Z");

function revision(id: string, createdAt: Date): RevisionInfo {
  return {
    id,
    homeKey: "h",
    parentId: null,
    reason: "idle",
    sizeBytes: 0,
    fileCount: 0,
    sha256: "0".repeat(64),
    createdAt,
    newBytes: 0,
  };
}

/** `count` revisions, one every `stepMs`, the newest at `now`. */
function series(count: number, stepMs: number): RevisionInfo[] {
  return Array.from({ length: count }, (_, i) =>
    revision(`r${String(i).padStart(4, "0")}`, new Date(now.getTime() - (count - 1 - i) * stepMs)),
  );
}

const ids = (revisions: RevisionInfo[]) => revisions.map((r) => r.id).sort();

describe("selectForRemoval", () => {
  it("keeps everything while there are at most 20", () => {
    expect(selectForRemoval(series(20, HOUR / 60), DEFAULT_RETENTION, now)).toEqual([]);
    expect(selectForRemoval([], DEFAULT_RETENTION, now)).toEqual([]);
  });

  it("keeps the last 20 of a busy day, removes the rest of it except the day's newest", () => {
    const revisions = series(30, 60_000); // 30 minutes, all today
    const removed = selectForRemoval(revisions, DEFAULT_RETENTION, now);
    expect(ids(removed)).toEqual(ids(revisions.slice(0, 10)));
  });

  it("keeps the newest of each of the last 14 days beyond the last 20", () => {
    // 4 a day for 30 days
    const revisions = series(120, 6 * HOUR);
    const removed = new Set(selectForRemoval(revisions, DEFAULT_RETENTION, now).map((r) => r.id));
    const kept = revisions.filter((r) => !removed.has(r.id));
    const last20 = revisions.slice(-20).map((r) => r.id);
    for (const id of last20) expect(removed.has(id)).toBe(false);
    const dayOf = (r: RevisionInfo) => r.createdAt.toISOString().slice(0, 10);
    for (let d = 0; d < 14; d += 1) {
      const day = new Date(now.getTime() - d * 24 * HOUR).toISOString().slice(0, 10);
      const newestOfDay = revisions.filter((r) => dayOf(r) === day).at(-1);
      expect(newestOfDay && removed.has(newestOfDay.id)).toBe(false);
    }
    // nothing older than 14 days survives; the last 20 reach back into day 5, days 6..13 keep one each
    const oldest = new Date(now.getTime() - 13 * 24 * HOUR).toISOString().slice(0, 10);
    expect(kept.every((r) => dayOf(r) >= oldest)).toBe(true);
    expect(kept.length).toBe(20 + 8);
  });

  it("applies a custom policy and takes the input in any order", () => {
    const revisions = series(10, 24 * HOUR).reverse();
    const removed = selectForRemoval(revisions, { keepLast: 1, keepDailyForDays: 3 }, now);
    expect(ids(removed)).toEqual(ids(series(10, 24 * HOUR).slice(0, 7)));
    expect(selectForRemoval(revisions, { keepLast: 0, keepDailyForDays: 0 }, now)).toHaveLength(10);
  });

  it("never removes revisions dated after now (a clock stepped back)", () => {
    const future = revision("future", new Date(now.getTime() + HOUR));
    expect(selectForRemoval([future], { keepLast: 0, keepDailyForDays: 0 }, now)).toEqual([]);
  });
});
