import { z } from "zod";
import { SupervisorProblem } from "./problems.ts";
import { type DesktopAction, MAX_ACTIONS_PER_BATCH } from "./wire.ts";

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

/** The whole batch is checked before any action runs, so a bad batch changes nothing. */
export function validateActions(input: unknown): DesktopAction[] {
  const parsed = ActionBatchSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => ({
    path: issue.path.join(".") || "actions",
    message: issue.message,
  }));
  const detail = errors.map((error) => `${error.path}: ${error.message}`).join("; ");
  throw new SupervisorProblem("INVALID_ACTIONS", `the action batch was not run: ${detail}`, { errors });
}
