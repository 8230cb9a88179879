import { z } from "zod";
import { type DesktopAction, MAX_ACTIONS_PER_BATCH, ProviderError } from "../contract/index.ts";

const coordinate = z.number().int().min(0).max(16_384);
const point = z.object({ x: coordinate, y: coordinate });
const modifiers = z
  .array(z.enum(["ctrl", "alt", "shift", "super"]))
  .max(4)
  .optional();

export const DesktopActionSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.enum(["click", "double_click", "right_click", "middle_click"]),
    x: coordinate,
    y: coordinate,
    modifiers,
  }),
  z.object({ type: z.literal("move"), x: coordinate, y: coordinate }),
  z.object({
    type: z.enum(["mouse_down", "mouse_up"]),
    button: z.enum(["left", "right", "middle"]),
    x: coordinate.optional(),
    y: coordinate.optional(),
  }),
  z.object({ type: z.literal("drag"), from: point, to: point }),
  z.object({
    type: z.literal("type"),
    text: z
      .string()
      .min(1)
      .max(4_096)
      .refine((text) => !text.includes("\0"), "must not contain NUL"),
  }),
  z.object({
    type: z.literal("key"),
    key: z.string().regex(/^[A-Za-z0-9_]{1,32}$/, "an X keysym name such as Return, a, F5 or Page_Down"),
    modifiers,
  }),
  z.object({
    type: z.literal("scroll"),
    x: coordinate,
    y: coordinate,
    dx: z.number().int().min(-50).max(50),
    dy: z.number().int().min(-50).max(50),
  }),
  z.object({ type: z.literal("wait"), ms: z.number().int().min(0).max(10_000) }),
]) satisfies z.ZodType<DesktopAction>;

export const ActionBatchSchema = z.array(DesktopActionSchema).min(1).max(MAX_ACTIONS_PER_BATCH);

export interface ActionIssue {
  path: string;
  message: string;
}

/**
 * The one check of an action batch, for every backend and the supervisor alike: the whole batch is
 * checked before any action runs, so a bad batch changes nothing.
 */
export function parseActionBatch(
  input: unknown,
): { ok: true; actions: DesktopAction[] } | { ok: false; issues: ActionIssue[]; detail: string } {
  const parsed = ActionBatchSchema.safeParse(input);
  if (parsed.success) return { ok: true, actions: parsed.data };
  const issues = parsed.error.issues.map((issue) => ({
    path: issue.path.join(".") || "actions",
    message: issue.message,
  }));
  const detail = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  return { ok: false, issues, detail: `the action batch was not run: ${detail}` };
}

/** parseActionBatch, failing as the contract does (INVALID_ACTIONS). */
export function validateActions(input: unknown): DesktopAction[] {
  const parsed = parseActionBatch(input);
  if (parsed.ok) return parsed.actions;
  throw new ProviderError("INVALID_ACTIONS", parsed.detail);
}
