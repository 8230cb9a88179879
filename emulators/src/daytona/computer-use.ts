/**
 * The toolbox's /computeruse routes, played with X tools on display :1 as the sandbox user.
 * start() launches what Daytona's computer-use plugin launches (Xvfb at VNC_RESOLUTION, default
 * 1024x768; xfce4; x11vnc on 5901 without a password; noVNC's websockify on 6080), each in a
 * session of its own so stop() can end it with all its children.
 */
import { badRequest, DaytonaHttpError } from "./errors.ts";
import type { Sandbox } from "./sandbox.ts";

const PROCESSES = ["xvfb", "xfce4", "x11vnc", "novnc"] as const;
const DISPLAY_NUMBER = 1;
const DISPLAY = `:${DISPLAY_NUMBER}`;

/**
 * The folder of the plugin's pid and log files, as the plugin keeps them. They are on the disk, so
 * they outlive a stop, while the processes they name do not; and pids start low again after a start,
 * so an old pid may now be another process's (which `kill -0` would take for the plugin's, and a stop
 * would kill). Daytona's daemon keeps them in memory, lost at every start: so here they are kept for
 * one boot of the container (pid 1's start time), and forgotten, with X's lock of the display (which
 * makes Xvfb refuse to start while the pid in it lives), at the first use after another.
 */
const STATE = `dir="$HOME/.daytona/computeruse"; mkdir -p "$dir"
boot=$(cut -d " " -f 22 /proc/1/stat)
{
  flock 9
  if [ "$(cat "$dir/boot" 2>/dev/null)" != "$boot" ]; then
    rm -f "$dir"/*.pid "$dir/dbus.env" /tmp/.X${DISPLAY_NUMBER}-lock /tmp/.X11-unix/X${DISPLAY_NUMBER}
    echo "$boot" > "$dir/boot"
  fi
} 9> "$dir/boot.lock"
running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }
report() { for name in ${PROCESSES.join(" ")}; do if running "$name"; then echo "$name $(cat "$dir/$name.pid")"; else echo "$name 0"; fi; done; }`;

const START = `${STATE}
launch() { name=$1; shift; running "$name" && return; setsid "$@" > "$dir/$name.log" 2> "$dir/$name.err" < /dev/null & echo $! > "$dir/$name.pid"; }
if ! running dbus; then
  eval "$(dbus-launch --sh-syntax)"
  echo "$DBUS_SESSION_BUS_PID" > "$dir/dbus.pid"
  echo "export DBUS_SESSION_BUS_ADDRESS='$DBUS_SESSION_BUS_ADDRESS'" > "$dir/dbus.env"
fi
. "$dir/dbus.env"
launch xvfb Xvfb ${DISPLAY} -screen 0 "\${VNC_RESOLUTION:-1024x768}x24"
for i in $(seq 100); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done
launch xfce4 startxfce4
launch x11vnc x11vnc -display ${DISPLAY} -forever -shared -nopw -rfbport 5901
launch novnc websockify --web=/usr/share/novnc/ 6080 localhost:5901
for port in 5901 6080; do
  for i in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done
report`;

const STOP = `${STATE}
for name in ${PROCESSES.join(" ")} dbus; do
  running "$name" && pkill -KILL -s "$(cat "$dir/$name.pid")"
  rm -f "$dir/$name.pid"
done
report`;

type Status = Record<string, { running: boolean; pid?: number; priority: number; autoRestart: boolean }>;

function statusOf(report: string): Status {
  const status: Status = {};
  for (const [index, line] of report.trim().split("\n").entries()) {
    const [name, pid] = line.split(" ");
    if (!name) continue;
    const running = Number(pid) > 0;
    status[name] = {
      running,
      ...(running ? { pid: Number(pid) } : {}),
      priority: (index + 1) * 100,
      autoRestart: true,
    };
  }
  return status;
}

async function x(sandbox: Sandbox, script: string, args: string[] = []) {
  const result = await sandbox.script(script, args, { env: { DISPLAY }, timeoutMs: 60_000 });
  if (result.code !== 0) {
    throw new DaytonaHttpError(
      500,
      result.stderr || "the X command failed",
      "INTERNAL_SERVER_ERROR",
      "DAYTONA_DAEMON",
    );
  }
  return result.stdout;
}

const text = async (sandbox: Sandbox, script: string, args: string[] = []) =>
  (await x(sandbox, script, args)).toString("utf8");

export async function start(sandbox: Sandbox) {
  const status = statusOf(await text(sandbox, START));
  const failed = PROCESSES.filter((name) => !status[name]?.running);
  if (failed.length > 0) {
    throw new DaytonaHttpError(
      503,
      `failed to start: [${failed.join(" ")}]`,
      "INTERNAL_SERVER_ERROR",
      "DAYTONA_DAEMON",
    );
  }
  return { message: "Computer use processes started successfully", status };
}

export async function stop(sandbox: Sandbox) {
  return {
    message: "Computer use processes stopped successfully",
    status: statusOf(await text(sandbox, STOP)),
  };
}

export async function status(sandbox: Sandbox) {
  const processes = Object.values(statusOf(await text(sandbox, `${STATE}\nreport`)));
  const running = processes.filter((process) => process.running).length;
  return { status: running === processes.length ? "active" : running > 0 ? "partial" : "inactive" };
}

const POSITION = 'eval "$(xdotool getmouselocation --shell)"; echo "$X $Y"';

async function position(sandbox: Sandbox, script = POSITION, args: string[] = []) {
  const [x0, y0] = (await text(sandbox, script, args)).trim().split("\n").pop()?.split(" ") ?? [];
  return { x: Number(x0), y: Number(y0) };
}

export const mousePosition = (sandbox: Sandbox) => position(sandbox);

export function mouseMove(sandbox: Sandbox, body: Record<string, unknown>) {
  return position(sandbox, `xdotool mousemove -- "$1" "$2"; ${POSITION}`, [
    coordinate(body.x),
    coordinate(body.y),
  ]);
}

const BUTTONS: Record<string, string> = { left: "1", middle: "2", right: "3" };

function button(value: unknown): string {
  const number = BUTTONS[typeof value === "string" ? value : "left"];
  if (!number) throw badRequest(`invalid button: ${String(value)}`);
  return number;
}

function coordinate(value: unknown): string {
  if (typeof value !== "number" || !Number.isFinite(value)) throw badRequest("coordinates must be numbers");
  return String(Math.round(value));
}

export function mouseClick(sandbox: Sandbox, body: Record<string, unknown>) {
  const repeat = body.double === true ? "2" : "1";
  return position(sandbox, `xdotool mousemove -- "$1" "$2" click --repeat "$4" "$3"; ${POSITION}`, [
    coordinate(body.x),
    coordinate(body.y),
    button(body.button),
    repeat,
  ]);
}

export function mouseDrag(sandbox: Sandbox, body: Record<string, unknown>) {
  return position(
    sandbox,
    `xdotool mousemove -- "$1" "$2" mousedown "$5" mousemove -- "$3" "$4" mouseup "$5"; ${POSITION}`,
    [
      coordinate(body.startX),
      coordinate(body.startY),
      coordinate(body.endX),
      coordinate(body.endY),
      button(body.button),
    ],
  );
}

const SCROLL: Record<string, string> = { up: "4", down: "5", left: "6", right: "7" };

export async function mouseScroll(sandbox: Sandbox, body: Record<string, unknown>) {
  const wheel = SCROLL[String(body.direction)];
  if (!wheel) throw badRequest(`invalid direction: ${String(body.direction)}`);
  const amount = typeof body.amount === "number" && body.amount > 0 ? Math.round(body.amount) : 1;
  await x(sandbox, 'xdotool mousemove -- "$1" "$2" click --repeat "$4" "$3"', [
    coordinate(body.x),
    coordinate(body.y),
    wheel,
    String(amount),
  ]);
  return { success: true };
}

/** Key names as the SDK's users write them, as xdotool's keysyms. */
const KEYS: Record<string, string> = {
  enter: "Return",
  return: "Return",
  esc: "Escape",
  escape: "Escape",
  tab: "Tab",
  backspace: "BackSpace",
  delete: "Delete",
  space: "space",
  up: "Up",
  down: "Down",
  left: "Left",
  right: "Right",
  home: "Home",
  end: "End",
  pageup: "Prior",
  pagedown: "Next",
  insert: "Insert",
  ctrl: "ctrl",
  control: "ctrl",
  alt: "alt",
  shift: "shift",
  // Daytona's cmd, and its other names for the key X calls super
  ...Object.fromEntries(["cmd", "meta", "win", "super"].map((alias) => [alias, "super"])),
};

function keysym(key: string): string {
  const name = key.trim();
  if (name === "") throw badRequest("empty key");
  return KEYS[name.toLowerCase()] ?? (/^f\d{1,2}$/i.test(name) ? name.toUpperCase() : name);
}

export async function keyboardType(sandbox: Sandbox, body: Record<string, unknown>) {
  const delay = typeof body.delay === "number" && body.delay >= 0 ? Math.round(body.delay) : 12;
  await x(sandbox, 'xdotool type --delay "$1" -- "$2"', [String(delay), String(body.text ?? "")]);
  return {};
}

export async function keyboardPress(sandbox: Sandbox, body: Record<string, unknown>) {
  const modifiers = Array.isArray(body.modifiers) ? body.modifiers.map(String) : [];
  const combo = [...modifiers, String(body.key ?? "")].map(keysym).join("+");
  await x(sandbox, 'xdotool key -- "$1"', [combo]);
  return {};
}

export async function keyboardHotkey(sandbox: Sandbox, body: Record<string, unknown>) {
  const combo = String(body.keys ?? "")
    .split("+")
    .map(keysym)
    .join("+");
  await x(sandbox, 'xdotool key -- "$1"', [combo]);
  return {};
}

/** A PNG of the screen (scrot; `-p` draws the pointer) after a line with the pointer's position. */
export async function screenshot(sandbox: Sandbox, showCursor: boolean) {
  const output = await x(
    sandbox,
    `f=$(mktemp --suffix=.png) && scrot -o $1 "$f" && ${POSITION} && cat "$f"; s=$?; rm -f "$f"; exit $s`,
    [showCursor ? "-p" : ""],
  );
  const newline = output.indexOf(10);
  const [cx, cy] = output.subarray(0, newline).toString("latin1").split(" ");
  const png = output.subarray(newline + 1);
  return {
    screenshot: png.toString("base64"),
    sizeBytes: png.length,
    ...(showCursor ? { cursorPosition: { x: Number(cx), y: Number(cy) } } : {}),
  };
}

export async function displayInfo(sandbox: Sandbox) {
  const [width, height] = (await text(sandbox, "xdotool getdisplaygeometry")).trim().split(" ").map(Number);
  return { displays: [{ id: 0, x: 0, y: 0, width, height, isActive: true }] };
}

/** Every visible window with its geometry and title; `isActive` marks the focused one. */
export async function windows(sandbox: Sandbox) {
  const output = await text(
    sandbox,
    `active=$(xdotool getactivewindow 2>/dev/null || echo 0)
for w in $(xdotool search --onlyvisible --name '' 2>/dev/null); do
  eval "$(xdotool getwindowgeometry --shell "$w" 2>/dev/null)" || continue
  printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$w" "$X" "$Y" "$WIDTH" "$HEIGHT" "$([ "$w" = "$active" ] && echo 1 || echo 0)" "$(xdotool getwindowname "$w" 2>/dev/null)"
done`,
  );
  return {
    windows: output
      .split("\n")
      .filter((line) => line.includes("\t"))
      .map((line) => {
        const [id, wx, wy, width, height, active, ...title] = line.split("\t");
        return {
          id: Number(id),
          x: Number(wx),
          y: Number(wy),
          width: Number(width),
          height: Number(height),
          isActive: active === "1",
          title: title.join("\t"),
        };
      }),
  };
}
