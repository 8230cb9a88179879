# Helpers shared by the /opt/cubicle scripts (sourced; POSIX sh).
RUN_DIR=/run/cubicle

# screen_vars <i>: sets SCREEN, DISPLAY_NUM (i+1), VIEW_PORT (6080+2i), CONTROL_PORT (6081+2i) and
# SCREEN_DIR (/run/cubicle/screens/<i>); fails unless i is 0..7.
screen_vars() {
  case "${1:-}" in [0-7]) ;; *) return 1 ;; esac
  SCREEN=$1
  DISPLAY_NUM=$(($1 + 1))
  VIEW_PORT=$((6080 + 2 * $1))
  CONTROL_PORT=$((6081 + 2 * $1))
  SCREEN_DIR=$RUN_DIR/screens/$1
}

usage() {
  echo "usage: $*" >&2
  exit 2
}

# alive <pidfile>: the recorded process is running.
alive() {
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# spawn <pidfile> <logfile> <command...>: starts the command detached from the caller (tini adopts
# and reaps it, and `docker exec` does not wait for it) and records its pid.
spawn() {
  pidfile=$1 logfile=$2
  shift 2
  ("$@" </dev/null >>"$logfile" 2>&1 & echo $! >"$pidfile")
}

# stop_pid <pidfile>: SIGTERM, SIGKILL after 3 s; forgets the pid.
stop_pid() {
  [ -s "$1" ] || { rm -f "$1"; return 0; }
  pid=$(cat "$1")
  rm -f "$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
}

# listening <port>: a TCP socket listens on the port (read from /proc; no ss/netstat in the image).
listening() {
  grep -qi ":$(printf '%04X' "$1") [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# wait_for <what> <command...>: retries the command for up to 30 s (a computer limited to one
# CPU that is starting Chromium can take well over 10 s to bring a server up).
wait_for() {
  what=$1
  shift
  for _ in $(seq 120); do
    "$@" && return 0
    sleep 0.25
  done
  echo "timed out waiting for $what" >&2
  return 1
}

display_ready() {
  DISPLAY=":$DISPLAY_NUM" xdotool getdisplaygeometry >/dev/null 2>&1
}

# The view server: view-only VNC on all interfaces of the container, port 6080+2i.
start_view() {
  spawn "$SCREEN_DIR/view.pid" "$SCREEN_DIR/view.log" \
    x11vnc -display ":$DISPLAY_NUM" -rfbport "$VIEW_PORT" -viewonly -shared -forever \
    -rfbauth "$SCREEN_DIR/view.passwd" -desktop "cubicle screen $SCREEN" -quiet
}

start_browser() {
  spawn "$SCREEN_DIR/browser.pid" "$SCREEN_DIR/browser.log" env DISPLAY=":$DISPLAY_NUM" /opt/cubicle/browser
}
