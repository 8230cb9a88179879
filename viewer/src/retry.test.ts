import { describe, expect, it } from "vitest";
import { MAX_FAILED_ATTEMPTS, nextRetryWait, RETRY_WAITS_MS } from "./retry.ts";

/** The waits one run of failures produces, starting either with a failed first attempt or with a drop. */
function schedule(start: "failed attempt" | "drop"): number[] {
  const waits: number[] = [];
  let failures = start === "failed attempt" ? 1 : 0;
  for (;;) {
    const wait = nextRetryWait(waits.length, failures);
    if (wait === null) return waits;
    waits.push(wait);
    failures += 1;
  }
}

describe("the reconnect schedule", () => {
  it("after a live screen drops: every wait once, then refused after five failed attempts", () => {
    expect(schedule("drop")).toEqual([250, 500, 1_000, 2_000, 4_000]);
  });

  it("when the first attempt fails: five attempts in all, so four waits", () => {
    expect(schedule("failed attempt")).toEqual([250, 500, 1_000, 2_000]);
  });

  it("a proxy restart that refuses two attempts is back well within five seconds", () => {
    const [drop, first, second] = schedule("drop");
    expect((drop ?? 0) + (first ?? 0) + (second ?? 0)).toBeLessThan(2_000);
  });

  it("gives up at the limit whatever the waits so far", () => {
    expect(nextRetryWait(0, MAX_FAILED_ATTEMPTS)).toBeNull();
  });

  it("never waits longer than the last wait", () => {
    expect(nextRetryWait(RETRY_WAITS_MS.length + 3, 1)).toBe(4_000);
  });
});
