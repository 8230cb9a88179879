/**
 * The view server's x11vnc flags, read from the computer image's own start_view (one source of
 * truth): lib.sh is sourced with `spawn` replaced by a printer. "Before" is the same list with the
 * pacing (and threading) flags taken out, which leaves x11vnc's defaults, as the image had them
 * until tuned.
 */
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const LIB = fileURLToPath(new URL("../../computer-image/rootfs/opt/cubicle/lib.sh", import.meta.url));

/** Pacing and threading flags x11vnc knows, with how many values each takes. */
const PACING: ReadonlyMap<string, number> = new Map([
  ["-defer", 1],
  ["-wait", 1],
  ["-wait_ui", 1],
  ["-setdefer", 1],
  ["-extra_fbur", 1],
  ["-nap", 0],
  ["-nonap", 0],
  ["-sb", 1],
  ["-wait_bog", 0],
  ["-nowait_bog", 0],
  ["-slow_fb", 1],
  ["-speeds", 1],
  ["-threads", 0],
  ["-nothreads", 0],
]);

/** Where the image's server listens and how it checks passwords; the bench sets its own. */
const PLACE: ReadonlyMap<string, number> = new Map([
  ["-display", 1],
  ["-rfbport", 1],
  ["-rfbauth", 1],
]);

function imageArguments(): string[] {
  const script = `. "$1"; spawn() { shift 2; printf '%s\\0' "$@"; }; screen_vars 0; start_view`;
  const printed = execFileSync("sh", ["-c", script, "sh", LIB], { encoding: "utf8" });
  const [command, ...args] = printed.split("\0").slice(0, -1);
  if (command !== "x11vnc") throw new Error(`start_view runs ${command}, not x11vnc`);
  return args;
}

function without(args: readonly string[], flags: ReadonlyMap<string, number>): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arity = flags.get(args[i] as string);
    if (arity === undefined) kept.push(args[i] as string);
    else i += arity;
  }
  return kept;
}

export interface ViewFlags {
  /** The image's flags as start_view has them now. */
  tuned: string[];
  /** The same without any pacing flag: x11vnc's defaults. */
  before: string[];
  /** The pacing flags of `tuned`, for the report. */
  pacing: string[];
}

export function viewFlags(): ViewFlags {
  const image = without(imageArguments(), PLACE);
  const before = without(image, PACING);
  const pacing = image.filter((arg, i) => PACING.has(arg) || PACING.get(image[i - 1] as string) === 1);
  return { tuned: image, before, pacing };
}

/**
 * x11vnc on `display` with `flags`, on 127.0.0.1 without a password: the bench's viewers and the
 * proxy's capabilities speak security None (bench/proxy/paths.ts), which changes nothing in pacing.
 */
export function x11vncArguments(flags: readonly string[], display: string, port: number): string[] {
  return ["-display", display, "-rfbport", String(port), "-localhost", "-nopw", ...flags];
}
