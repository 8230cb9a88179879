import { ActionBatchSchema } from "@cubicle/supervisor/actions";
import type { DesktopAction } from "./contract.ts";
import { ProviderError } from "./errors.ts";

/**
 * The whole batch is checked before any action runs, so a bad batch changes nothing. The rules
 * are the supervisor's (one schema for every provider); the failure is the contract's.
 */
export function validateActions(input: unknown): DesktopAction[] {
  const parsed = ActionBatchSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .map((issue) => `${issue.path.join(".") || "actions"}: ${issue.message}`)
    .join("; ");
  throw new ProviderError("INVALID_ACTIONS", `the action batch was not run: ${detail}`);
}
