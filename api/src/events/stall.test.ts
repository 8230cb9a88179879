import { describe, expect, it } from "vitest";
import { StallWatch } from "./stall.ts";

describe("StallWatch", () => {
  const watch = () => {
    let now = 1_000;
    const stall = new StallWatch(30_000, () => now);
    return { stall, at: (ms: number) => (now = 1_000 + ms) };
  };

  it("warns once when the same horizon holds events back past the limit, with how long", () => {
    const { stall, at } = watch();
    expect(stall.check("100")).toBeUndefined();
    at(29_999);
    expect(stall.check("100")).toBeUndefined();
    at(30_000);
    expect(stall.check("100")).toBe(30_000);
    // not every read after that, however long it lasts
    for (const ms of [31_000, 60_000, 600_000]) {
      at(ms);
      expect(stall.check("100")).toBeUndefined();
    }
  });

  it("starts over when the horizon moves or nothing waits, and warns for the next stall", () => {
    const { stall, at } = watch();
    stall.check("100");
    at(20_000);
    // the oldest transaction ended; a younger one holds events back now, timed from here
    expect(stall.check("105")).toBeUndefined();
    at(45_000);
    expect(stall.check("105")).toBeUndefined();
    at(50_000);
    expect(stall.check("105")).toBe(30_000);
    at(51_000);
    expect(stall.check(undefined)).toBeUndefined();
    at(52_000);
    expect(stall.check("105")).toBeUndefined();
    at(82_000);
    expect(stall.check("105")).toBe(30_000);
  });

  it("never warns while nothing waits", () => {
    const { stall, at } = watch();
    for (const ms of [0, 40_000, 100_000]) {
      at(ms);
      expect(stall.check(undefined)).toBeUndefined();
    }
  });
});
