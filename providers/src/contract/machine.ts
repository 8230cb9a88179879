/**
 * The machine vocabulary every backend speaks, whichever engine runs the machine: command events
 * and exit codes, file entries, screen geometry, desktop actions and observations. Types and
 * constants only, so that the supervisor's wire contract and every adapter share one definition.
 */

export type CommandEvent =
  | { type: "stdout"; data: string }
  | { type: "stderr"; data: string }
  | { type: "exit"; code: number; message?: string; truncated: boolean };

/** A command killed by its timeout exits with this code (as coreutils' `timeout` does). */
export const EXIT_TIMED_OUT = 124;
/** A command killed because its caller went away exits with this code (128 + SIGINT). */
export const EXIT_ABORTED = 130;
export const OUTPUT_TRUNCATED_MARKER = "\n[cubicle: output truncated]\n";
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

export interface FileEntry {
  name: string;
  /** Relative to the home, with forward slashes. */
  path: string;
  type: "file" | "directory" | "symlink";
  size: number;
  executable: boolean;
  modifiedAt: string;
}

export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;

/** Screens per machine at most (a Team Computer's bots each have one). */
export const MAX_SCREENS = 8;
export const SCREEN_WIDTH = 1280;
export const SCREEN_HEIGHT = 800;

export interface Observation {
  png: Uint8Array;
  width: number;
  height: number;
  cursor: { x: number; y: number };
  activeWindow: string | null;
}

export const MAX_ACTIONS_PER_BATCH = 24;

export type Modifier = "ctrl" | "alt" | "shift" | "super";
export type MouseButton = "left" | "right" | "middle";

export type DesktopAction =
  | {
      type: "click" | "double_click" | "right_click" | "middle_click";
      x: number;
      y: number;
      modifiers?: Modifier[];
    }
  | { type: "move"; x: number; y: number }
  | { type: "mouse_down" | "mouse_up"; button: MouseButton; x?: number; y?: number }
  | { type: "drag"; from: { x: number; y: number }; to: { x: number; y: number } }
  | { type: "type"; text: string }
  | { type: "key"; key: string; modifiers?: Modifier[] }
  | { type: "scroll"; x: number; y: number; dx: number; dy: number }
  | { type: "wait"; ms: number };

export interface ActResult {
  /** How many actions ran to completion, in order; on failure, the failing one is the next. */
  completed: number;
  total: number;
  error?: string;
}
