import { randomInt } from "node:crypto";
import type { ActResult, DesktopAction, Observation } from "@cubicle/providers/contract";
import { actionScript } from "@cubicle/providers/kernel";
import type { ScreenStatus } from "@cubicle/providers/supervisor-wire";
import type Docker from "dockerode";
import { SupervisorProblem } from "../../problems.ts";
import { dockerFailure, dockerStatus } from "./errors.ts";
import { checkedExec, collectExec } from "./exec.ts";

/**
 * Screens inside the computer, driven through the image's scripts in /opt/cubicle. Screen i is
 * display :(i+1), view port 6080+2i, control port 6081+2i. Nothing is remembered here: a screen's
 * view password lives next to its state in the computer (`view.secret`, readable only by the
 * computer's user), so any supervisor process can answer with it.
 */

export const viewPortOf = (index: number) => 6080 + 2 * index;
export const controlPortOf = (index: number) => 6081 + 2 * index;
export const displayOf = (index: number) => `:${index + 1}`;

const SCREEN_HELPERS = `set -u
i=$1
dir=/run/cubicle/screens/$i
view=$((6080 + 2 * i))
mkdir -p /run/cubicle/locks
exec 9>"/run/cubicle/locks/screen-$i"
# one change to a screen at a time, whichever supervisor asks; the scripts below run with the lock's
# descriptor closed (9>&-), or the daemons they start would hold the lock for ever
flock -w 60 9 || { echo "screen $i is busy" >&2; exit 3; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
listening() { grep -qi ":$(printf '%04X' "$1") [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null; }
wait_until() { n=0; while ! "$@"; do n=$((n + 1)); [ $n -gt 200 ] && return 1; sleep 0.2; done; }
view_up() { alive "$dir/view.pid" && listening "$view"; }
restarted() { [ "$(cat "$dir/view.pid" 2>/dev/null)" != "$1" ] && view_up; }
why() { echo "$1; view server log: $(tail -n 3 "$dir/view.log" 2>/dev/null | tr '\n' ' ')" >&2; }
`;

/** $2 a fresh password, used only when the screen has none we know yet. Prints the view password. */
const ENSURE_SCRIPT = `${SCREEN_HELPERS}
pw=$2
if [ "$i" = 0 ]; then
  # screen 0 belongs to the entry point, which starts it when the computer boots
  wait_until alive "$dir/xvfb.pid" || { echo "screen 0 did not come up" >&2; exit 4; }
elif ! alive "$dir/xvfb.pid"; then
  /opt/cubicle/screen-start "$i" "$pw" 9>&- >&2 || exit 5
  (umask 077 && printf '%s' "$pw" > "$dir/view.secret") || exit 6
fi
if [ ! -s "$dir/view.secret" ]; then
  # started without us (screen 0 at boot, with a password nobody knows): give it one we keep; the
  # entry point's loop restarts a view server that died, and the new one reads the new password
  wait_until view_up || { why "the view server of screen $i did not start"; exit 7; }
  old=$(cat "$dir/view.pid")
  (umask 077 && x11vnc -storepasswd "$pw" "$dir/view.passwd" >/dev/null 2>&1 && printf '%s' "$pw" > "$dir/view.secret") || exit 6
  kill "$old" 2>/dev/null
  wait_until restarted "$old" || { why "the view server of screen $i did not restart"; exit 8; }
fi
wait_until view_up || { why "the view server of screen $i is not listening"; exit 9; }
cat "$dir/view.secret"`;

const STOP_SCRIPT = `${SCREEN_HELPERS}
/opt/cubicle/screen-stop "$i" 9>&- >&2`;

const CONTROL_OPEN_SCRIPT = `${SCREEN_HELPERS}
alive "$dir/xvfb.pid" || { echo "screen $i is not running" >&2; exit 4; }
/opt/cubicle/control-open "$i" "$2" 9>&- >&2`;

const CONTROL_CLOSE_SCRIPT = `${SCREEN_HELPERS}
/opt/cubicle/control-close "$i" 9>&- >&2`;

/** Cursor position, then the active window's title (fluxbox keeps _NET_ACTIVE_WINDOW). */
const POINTER_SCRIPT = `/opt/cubicle/cursor "$1"
DISPLAY=":$(($1 + 1))" xdotool getactivewindow getwindowname 2>/dev/null || true`;

// VNC passwords are at most 8 characters; the alphabet avoids look-alike characters.
const PASSWORD_ALPHABET = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";

export function vncPassword(): string {
  return Array.from({ length: 8 }, () => PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)]).join("");
}

export async function ensureScreen(container: Docker.Container, index: number): Promise<string> {
  const password = await checkedExec(
    container,
    `starting screen ${index}`,
    ["sh", "-c", ENSURE_SCRIPT, "cubicle-screen", String(index), vncPassword()],
    { timeoutMs: 90_000 },
  );
  if (password.trim() === "")
    throw new SupervisorProblem("COMPUTER_FAILURE", `screen ${index} has no view password`);
  return password.trim();
}

export async function stopScreen(container: Docker.Container, index: number): Promise<void> {
  await checkedExec(
    container,
    `stopping screen ${index}`,
    ["sh", "-c", STOP_SCRIPT, "cubicle-screen", String(index)],
    {
      timeoutMs: 90_000,
    },
  );
}

export async function openControl(
  container: Docker.Container,
  index: number,
  password: string,
): Promise<void> {
  await checkedExec(
    container,
    `opening control of screen ${index}`,
    ["sh", "-c", CONTROL_OPEN_SCRIPT, "cubicle-screen", String(index), password],
    { timeoutMs: 90_000 },
  );
}

export async function closeControl(container: Docker.Container, index: number): Promise<void> {
  await checkedExec(
    container,
    `closing control of screen ${index}`,
    ["sh", "-c", CONTROL_CLOSE_SCRIPT, "cubicle-screen", String(index)],
    { timeoutMs: 90_000 },
  );
}

/**
 * Which screens run, from the computer's processes, with host ports where published. Docker's `top`
 * lists them with `ps` on the host: nothing runs inside the computer, and it answers in a third of
 * an exec's time (every api call that checks the computer asks this).
 */
export async function screensOf(
  container: Docker.Container,
  hostPort: (containerPort: number) => number | null,
): Promise<ScreenStatus[]> {
  let top: { Processes?: string[][] };
  try {
    top = await container.top({ ps_args: "-eo pid,args" });
  } catch (error) {
    // 409: it is not running
    if (dockerStatus(error) === 409)
      throw new SupervisorProblem("COMPUTER_STOPPED", "the computer is not running", { cause: error });
    throw dockerFailure("listing the computer's processes failed", error);
  }
  // each row: the pid, then the command line (Docker joins its words with single spaces)
  return parseScreens((top.Processes ?? []).map((row) => row.slice(1).join(" ")).join("\n"), hostPort);
}

export function parseScreens(ps: string, hostPort: (containerPort: number) => number | null): ScreenStatus[] {
  const displays = new Set<number>();
  const vncPorts = new Set<number>();
  for (const line of ps.split("\n")) {
    const xvfb = /^\S*Xvfb :(\d+)(\s|$)/.exec(line);
    if (xvfb) displays.add(Number(xvfb[1]));
    const vnc = /^\S*x11vnc\s.*-rfbport (\d+)(\s|$)/.exec(line);
    if (vnc) vncPorts.add(Number(vnc[1]));
  }
  const screens: ScreenStatus[] = [];
  for (let index = 0; index < 8; index++) {
    const view = vncPorts.has(viewPortOf(index));
    const control = vncPorts.has(controlPortOf(index));
    if (!view && !control && !displays.has(index + 1)) continue;
    screens.push({
      index,
      display: displayOf(index),
      viewPort: view ? hostPort(viewPortOf(index)) : null,
      control,
      controlPort: control ? hostPort(controlPortOf(index)) : null,
    });
  }
  return screens;
}

function pngSize(png: Buffer): { width: number; height: number } | null {
  // the 8-byte signature, then the IHDR chunk: length, "IHDR", width, height
  if (png.length < 24 || png.readUInt32BE(0) !== 0x89504e47 || png.toString("latin1", 12, 16) !== "IHDR") {
    return null;
  }
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

export async function observe(container: Docker.Container, index: number): Promise<Observation> {
  await ensureScreen(container, index);
  const [shot, pointer] = await Promise.all([
    collectExec(container, ["/opt/cubicle/observe", String(index)], {
      timeoutMs: 30_000,
      maxStdoutBytes: 64 * 1024 * 1024,
    }),
    checkedExec(container, `reading the pointer of screen ${index}`, [
      "sh",
      "-c",
      POINTER_SCRIPT,
      "cubicle-pointer",
      String(index),
    ]),
  ]);
  const size = shot.code === 0 ? pngSize(shot.stdout) : null;
  if (!size) {
    throw new SupervisorProblem(
      "COMPUTER_FAILURE",
      `the screenshot of screen ${index} failed${shot.stderr ? `: ${shot.stderr}` : ""}`,
    );
  }
  const [position = "", title] = pointer.split("\n");
  const [x, y] = position.trim().split(/\s+/).map(Number);
  return {
    png: new Uint8Array(shot.stdout.buffer, shot.stdout.byteOffset, shot.stdout.byteLength),
    ...size,
    cursor: { x: Number.isFinite(x) ? (x ?? 0) : 0, y: Number.isFinite(y) ? (y ?? 0) : 0 },
    activeWindow: title?.trim() ? title.trim() : null,
  };
}

export async function act(
  container: Docker.Container,
  index: number,
  actions: DesktopAction[],
): Promise<ActResult> {
  await ensureScreen(container, index);
  const { script, deadlineMs } = actionScript(actions);
  const result = await collectExec(container, ["sh", "-c", script], {
    env: [`DISPLAY=${displayOf(index)}`],
    timeoutMs: deadlineMs,
  });
  const total = actions.length;
  const completed = Math.min(
    total,
    result.stdout
      .toString("utf8")
      .split("\n")
      .filter((line) => line === "ok").length,
  );
  if (completed === total && result.code === 0) return { completed, total };
  const failed = actions[completed];
  const why = result.stderr || (result.code === null ? "it did not finish" : `exit ${result.code}`);
  return {
    completed,
    total,
    error: `action ${completed + 1}${failed ? ` (${failed.type})` : ""} failed: ${why}`,
  };
}
