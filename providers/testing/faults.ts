import type { FaultPlan, FaultPoint } from "../src/kernel/faults.ts";

/** A fault plan the suites arm: each armed failure happens once, at the next call that reaches it. */
export class ArmedFaults implements FaultPlan {
  private readonly armed = new Map<FaultPoint, number>();

  arm(point: FaultPoint, times = 1): void {
    this.armed.set(point, (this.armed.get(point) ?? 0) + times);
  }

  take(point: FaultPoint): boolean {
    const left = this.armed.get(point) ?? 0;
    if (left === 0) return false;
    this.armed.set(point, left - 1);
    return true;
  }
}
