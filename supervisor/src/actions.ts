import type { DesktopAction } from "@cubicle/providers/contract";
import { parseActionBatch } from "@cubicle/providers/kernel";
import { SupervisorProblem } from "./problems.ts";

/** The providers' one batch check, failing as the supervisor's wire does (with the issues listed). */
export function validateActions(input: unknown): DesktopAction[] {
  const parsed = parseActionBatch(input);
  if (parsed.ok) return parsed.actions;
  throw new SupervisorProblem("INVALID_ACTIONS", parsed.detail, { errors: parsed.issues });
}
