import { expect, type TestContext } from "vitest";

/** The report's families: what kind of trouble a case brings. */
export type Family =
  | "faults"
  | "load"
  | "hostile: capability tokens"
  | "hostile: rfb"
  | "hostile: paths"
  | "hostile: api input"
  | "hostile: authorization";

/** What one case did, kept on the test itself so the report reads it back after the run. */
export interface CaseCounts {
  family: Family;
  /** Inputs sent, faults injected or operations run. */
  tried: number;
  /** Of those, answered with the designed refusal or failed cleanly (a clear error, nothing half-done). */
  refused: number;
  /** Things that had to survive and did not (files, rows, leases, sessions). The suite fails on any. */
  lost: number;
}

declare module "vitest" {
  interface TaskMeta {
    reliability?: CaseCounts;
  }
}

export interface Tally {
  tried(count?: number): void;
  refused(count?: number): void;
  /**
   * Records the things found missing after a fault or a load, and fails the case unless there are
   * none: the count and the assertion come from one list, so the report cannot say 0 while a test
   * looked away.
   */
  lost(missing: readonly string[]): void;
}

export function tally(context: TestContext, family: Family): Tally {
  const counts = context.task.meta.reliability ?? { family, tried: 0, refused: 0, lost: 0 };
  context.task.meta.reliability = counts;
  return {
    tried: (count = 1) => {
      counts.tried += count;
    },
    refused: (count = 1) => {
      counts.refused += count;
    },
    lost: (missing) => {
      counts.lost += missing.length;
      expect(missing, "lost after the fault or load").toEqual([]);
    },
  };
}
