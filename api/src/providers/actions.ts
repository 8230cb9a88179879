import { z } from "zod";
import { type DesktopAction, MAX_ACTIONS_PER_BATCH } from "./contract.ts";
import { ProviderError } from "./errors.ts";

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
  z.object({ type: z.literal("type"), text: z.string().min(1).max(4_096) }),
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

/** The whole batch is checked before any action runs, so a bad batch changes nothing. */
export function validateActions(input: unknown): DesktopAction[] {
  const parsed = ActionBatchSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .map((issue) => `${issue.path.join(".") || "actions"}: ${issue.message}`)
    .join("; ");
  throw new ProviderError("INVALID_ACTIONS", `the action batch was not run: ${detail}`);
}
