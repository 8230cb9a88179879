/**
 * Box's desktop: display :0 (1280x800, fluxbox) comes up with the box; the VNC stream is made at
 * the first desktop call of each ready spell (x11vnc on :0 with the box's VNC password of this
 * boot), answered "provisioning" for a while as Box does, then as a noVNC URL on the emulator whose
 * `_token` opens the page and the websockify socket, which the emulator bridges to x11vnc.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocketServer } from "ws";
import { sendJson } from "../http/body.ts";
import { refuseUpgrade, websockify } from "../machines/index.ts";
import type { Box, Desktop } from "./box.ts";
import { BoxError, badRequest, errorBody } from "./errors.ts";

const DISPLAY = ":0";
const VNC_PORT = 5900;

/**
 * Display :0 with its window manager, as the box's user; a display left by an earlier boot (its
 * lock and socket survive a stop) is cleared first. Does nothing for what already runs.
 */
const DISPLAY_UP = `me=$(id -u)
if ! pgrep -u "$me" -x Xvfb >/dev/null; then
  rm -f /tmp/.X0-lock /tmp/.X11-unix/X0
  setsid Xvfb ${DISPLAY} -screen 0 1280x800x24 -nolisten tcp > /tmp/.box-xvfb.log 2>&1 < /dev/null &
fi
for i in $(seq 600); do xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.1; done
xdotool getdisplaygeometry >/dev/null 2>&1 || { echo "display ${DISPLAY} did not come up" >&2; exit 1; }
if ! pgrep -u "$me" -x fluxbox >/dev/null; then
  fbsetroot -solid "#2e3440" 2>/dev/null
  setsid fluxbox > /tmp/.box-fluxbox.log 2>&1 < /dev/null &
fi
exit 0`;

/**
 * x11vnc on display :0 with password $1, shared and lasting, on all the container's addresses. One
 * already running with that password is kept (\`-storepasswd\` writes the same bytes for the same
 * password); another is replaced.
 */
const VNC_UP = `me=$(id -u); dir=$HOME/.vnc; mkdir -p "$dir"; next=$dir/passwd.next; rm -f "$next"
(umask 077 && x11vnc -storepasswd "$1" "$next" >/dev/null 2>&1) || { echo "could not store the VNC password" >&2; exit 1; }
if pgrep -u "$me" -x x11vnc >/dev/null && cmp -s "$next" "$dir/passwd"; then
  rm -f "$next"
else
  pkill -u "$me" -x x11vnc
  for i in $(seq 50); do pgrep -u "$me" -x x11vnc >/dev/null || break; sleep 0.1; done
  mv -f "$next" "$dir/passwd"
  # without a display manager there is nothing to wait for before x11vnc owns the selections
  X11VNC_AVOID_WINDOWS=never setsid x11vnc -display ${DISPLAY} -rfbport ${VNC_PORT} -rfbauth "$dir/passwd" \\
    -shared -forever -desktop box -quiet > /tmp/.box-x11vnc.log 2>&1 < /dev/null &
fi
for i in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/${VNC_PORT}) 2>/dev/null && exit 0; sleep 0.1; done
echo "x11vnc did not listen on ${VNC_PORT}" >&2; exit 1`;

/**
 * Runs an X helper script. Its waits (600 tries 0.1 s apart, for the display or for x11vnc) and this
 * bound only decide when to give up, so they are generous: with 15 s and 30 s, a box coming up
 * while two suites drove desktops on a loaded two-core machine once went to `error`, and a slow
 * display is the step of coming up that can run out of time.
 */
async function x(box: Box, script: string, args: string[] = []): Promise<void> {
  const result = await box.script(script, args, { env: { DISPLAY }, timeoutMs: 120_000 });
  if (result.code !== 0) throw new Error(result.stderr || "an X helper failed");
}

/** Brings display :0 and its window manager up (a box becoming ready). */
export function displayUp(box: Box): Promise<void> {
  return x(box, DISPLAY_UP);
}

function startVnc(box: Box, password: string): Desktop {
  const desktop: Desktop = { requestedAt: Date.now(), up: false, failure: null };
  x(box, VNC_UP, [password]).then(
    () => {
      desktop.up = true;
    },
    (error: unknown) => {
      desktop.failure = error instanceof Error ? error.message : String(error);
    },
  );
  return desktop;
}

/**
 * `POST /boxes/{id}/desktop?vnc=1`: "provisioning" (poll again) for `provisioningMs` after the first
 * call of the spell and until x11vnc listens, then the noVNC URL of this spell.
 */
export function desktopAnswer(
  box: Box,
  query: Record<string, string>,
  body: Record<string, unknown>,
  origin: string,
  provisioningMs: number,
) {
  if (query.vnc !== "1")
    throw badRequest("vnc_required", "The emulator has only the noVNC desktop (?vnc=1).");
  if (body.publicAccess === true) {
    throw badRequest("public_access_not_emulated", "The emulator's desktop URLs always need their token.");
  }
  const token = box.desktopToken;
  const password = box.vncPassword;
  if (!token || !password) throw new Error(`box ${box.id} has no desktop token while ready`);
  if (box.desktop?.failure) {
    const failure = box.desktop.failure;
    box.desktop = null;
    throw new BoxError(500, "desktop_failed", `The VNC desktop did not start: ${failure}`);
  }
  box.desktop ??= startVnc(box, password);
  if (!box.desktop.up || Date.now() - box.desktop.requestedAt < provisioningMs) {
    return { ok: true, type: "desktop.provisioning", provisioning: true, message: "Preparing VNC desktop…" };
  }
  const url = new URL(`${origin}/desktop/${box.id}/vnc.html`);
  url.searchParams.set("_token", token);
  url.searchParams.set("password", password);
  return {
    ok: true,
    type: "desktop.url",
    success: true,
    desktopUrl: url.toString(),
    ip: box.ip,
    mode: "vnc",
  };
}

/** `/desktop/{id}/(vnc.html|websockify)`: the id and the file, or null for any other path. */
export function desktopPath(pathname: string): { boxId: string; file: string } | null {
  const match = /^\/desktop\/([^/]+)\/(vnc\.html|websockify)$/.exec(pathname);
  return match ? { boxId: match[1] ?? "", file: match[2] ?? "" } : null;
}

/** The box whose desktop `_token` of this spell the request carries; null when there is none. */
function opened(box: Box | undefined, req: IncomingMessage): Box | null {
  const token = new URL(req.url ?? "/", "http://emulator").searchParams.get("_token");
  if (box?.state !== "ready" || !token || token !== box.desktopToken || !box.ip) return null;
  return box;
}

const forbidden = () => new BoxError(403, "forbidden", "Invalid or expired desktop token.");

/** A small stand-in for noVNC's page: where its socket is, for a person who opens the URL. */
const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Box desktop (emulated)</title></head>
<body>
<h1>Box desktop (emulated)</h1>
<p>This box's screen is served over VNC at the WebSocket <code>websockify</code> next to this page,
with the same <code>_token</code> query; its VNC password is the <code>password</code> query of this URL.</p>
</body>
</html>
`;

export function serveDesktopPage(box: Box | undefined, req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  const error = req.method !== "GET" ? new BoxError(405, "method_not_allowed", "GET only.") : null;
  const answer = error ?? (opened(box, req) ? null : forbidden());
  if (answer) {
    sendJson(res, answer.status, errorBody(answer));
    return;
  }
  res
    .writeHead(200, {
      "Content-Type": "text/html; charset=utf-8",
      "Cache-Control": "no-store",
      "Content-Length": Buffer.byteLength(PAGE),
    })
    .end(PAGE);
}

/** The websockify socket: refused (403) unless the token is this spell's; then bridged to x11vnc. */
export function upgradeDesktop(
  sockets: WebSocketServer,
  box: Box | undefined,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const open = opened(box, req);
  if (!open?.ip) {
    refuseUpgrade(socket, 403, errorBody(forbidden()));
    return;
  }
  websockify(
    sockets,
    {
      host: open.ip,
      port: VNC_PORT,
      hold: (connection) => open.hold(connection),
      errorBody: (status, message) => errorBody(new BoxError(status, "desktop_unreachable", message)),
    },
    req,
    socket,
    head,
  );
}
