import { z } from "zod";
import type { DesktopAction } from "../actions.ts";

// The shapes of `DesktopAction`, described for an agent choosing them. The api checks each batch
// again (its limits are the authority); these schemas are what the agent reads.

const x = z.number().int().min(0).describe("Pixels from the screen's left edge (0-1279).");
const y = z.number().int().min(0).describe("Pixels from the screen's top edge (0-799).");
const point = z.object({ x, y });
const modifiers = z
  .array(z.enum(["ctrl", "alt", "shift", "super"]))
  .optional()
  .describe("Keys held during the action.");

const action = z.discriminatedUnion("type", [
  z
    .object({ type: z.enum(["click", "double_click", "right_click", "middle_click"]), x, y, modifiers })
    .describe("Moves the pointer to (x, y) and clicks there."),
  z.object({ type: z.literal("move"), x, y }).describe("Moves the pointer to (x, y)."),
  z
    .object({
      type: z.enum(["mouse_down", "mouse_up"]),
      button: z.enum(["left", "right", "middle"]),
      x: x.optional(),
      y: y.optional(),
    })
    .describe("Presses or releases a button, at (x, y) when given, else where the pointer is."),
  z
    .object({ type: z.literal("drag"), from: point, to: point })
    .describe("Presses the left button at `from`, moves to `to` and releases it."),
  z
    .object({ type: z.literal("type"), text: z.string().min(1).max(4096) })
    .describe("Types text into the focused window, as a keyboard would."),
  z
    .object({
      type: z.literal("key"),
      key: z.string().describe("An X keysym name: Return, Tab, Escape, BackSpace, Page_Down, F5, a, …"),
      modifiers,
    })
    .describe(
      'Presses one key, with modifiers held (ctrl+l: {"type":"key","key":"l","modifiers":["ctrl"]}).',
    ),
  z
    .object({
      type: z.literal("scroll"),
      x,
      y,
      dx: z.number().int().min(-50).max(50).describe("Notches right (+) or left (-)."),
      dy: z.number().int().min(-50).max(50).describe("Notches down (+) or up (-)."),
    })
    .describe("Scrolls the wheel with the pointer at (x, y)."),
  z
    .object({ type: z.literal("wait"), ms: z.number().int().min(0).max(10_000) })
    .describe("Waits, to let the screen catch up between actions."),
]) satisfies z.ZodType<DesktopAction>;

/** A batch: the api takes up to 24 actions and runs none of them when one is malformed. */
export const actionBatch = z.array(action).min(1).max(24);
