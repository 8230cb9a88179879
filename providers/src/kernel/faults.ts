/**
 * Failure injection for the shared fault suite. A provider consults its plan at the real step
 * where such a failure happens in production (a machine that does not come up, an archive
 * stream that breaks halfway) and fails there the way reality would, so the suite exercises the
 * provider's own error handling, not a wrapper's.
 */
export type FaultPoint = "provision" | "export" | "import";

export interface FaultPlan {
  /** True once for each armed failure at `point`; the caller must then fail. */
  take(point: FaultPoint): boolean;
}
