# Helpers shared by the /opt/cubicle scripts (sourced; POSIX sh). Vendors' sandboxes source them too
# (providers/src/remote/kit), with their own state folder, display numbering and ports.
RUN_DIR=${CUBICLE_RUN_DIR:-/run/cubicle}
DISPLAY_BASE=${CUBICLE_DISPLAY_BASE:-1}
# screen i serves view on PORT_BASE + 2i and control on PORT_BASE + 2i + 1
PORT_BASE=${CUBICLE_PORT_BASE:-6080}

# screen_vars <i>: sets SCREEN, DISPLAY_NUM (i+DISPLAY_BASE), VIEW_PORT (PORT_BASE+2i), CONTROL_PORT
# (PORT_BASE+2i+1) and SCREEN_DIR ($RUN_DIR/screens/<i>); fails unless i is 0..7.
screen_vars() {
  case "${1:-}" in [0-7]) ;; *) return 1 ;; esac
  SCREEN=$1
  DISPLAY_NUM=$(($1 + DISPLAY_BASE))
  VIEW_PORT=$((PORT_BASE + 2 * $1))
  CONTROL_PORT=$((PORT_BASE + 1 + 2 * $1))
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

# stop_pid <pidfile>: SIGTERM, SIGKILL after 3 s; forgets the pid. Returns once the process is gone
# (its listening ports free for a successor).
stop_pid() {
  [ -s "$1" ] || { rm -f "$1"; return 0; }
  pid=$(cat "$1")
  rm -f "$1"
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

# listening <port>: a TCP socket listens on the port (read from /proc; no ss/netstat in the image).
listening() {
  grep -qi ":$(printf '%04X' "$1") [0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# wait_for <what> <command...>: retries the command for up to 30 s (a computer limited to one
# CPU that is starting Chromium can take well over 10 s to bring a server up), every 50 ms: a
# screen's start waits on it twice, and a viewer waits for the screen.
wait_for() {
  what=$1
  shift
  for _ in $(seq 600); do
    "$@" && return 0
    sleep 0.05
  done
  echo "timed out waiting for $what" >&2
  return 1
}

display_ready() {
  DISPLAY=":$DISPLAY_NUM" xdotool getdisplaygeometry >/dev/null 2>&1
}

# The view server: view-only VNC on all interfaces of the container, port 6080+2i. A viewer may
# see the screen and nothing else: -viewonly drops its input and -nosel stops the clipboard in both
# directions (x11vnc then neither watches PRIMARY, CLIPBOARD and the cut buffer to send them as
# ServerCutText, nor sets them from a viewer's ClientCutText). The control server keeps both.
# Pacing (bench/screen measures it against x11vnc's defaults): -defer 0 sends a change as soon as
# it is seen instead of holding it 20 ms (a change on an idle screen shows about 30 ms sooner, and
# a 30 fps video keeps its rate on a busy machine); -nowait_bog keeps x11vnc from sleeping up to
# 1.5 s when the screen changes non-stop (a video, a scrolling build log) with no input, which a
# view server never gets. Not -threads: it takes a new viewer about 100 ms sooner, but x11vnc's
# threaded mode is where its crash reports are.
start_view() {
  spawn "$SCREEN_DIR/view.pid" "$SCREEN_DIR/view.log" \
    x11vnc -display ":$DISPLAY_NUM" -rfbport "$VIEW_PORT" -viewonly -nosel -shared -forever \
    -rfbauth "$SCREEN_DIR/view.passwd" -desktop "cubicle screen $SCREEN" -quiet \
    -defer 0 -nowait_bog
}

start_browser() {
  spawn "$SCREEN_DIR/browser.pid" "$SCREEN_DIR/browser.log" env DISPLAY=":$DISPLAY_NUM" /opt/cubicle/browser
}

# Browsers. Chromium keeps cookies in memory and writes its Cookies database from a timer that
# fires 30 s after the first change since the last write (there is no flush to ask for); other
# profile files (Preferences, Local State) are written on shorter timers. A browser killed with
# SIGKILL loses whatever it had not written yet; SIGTERM makes it write everything and exit.
#
# BROWSER_SETTLE_SECONDS: Chromium's 30 s cookie commit interval plus a second for the write itself,
# so everything a running browser changed before settle_browsers was called is on disk after it.
BROWSER_SETTLE_SECONDS=31
# BROWSER_CLOSE_GRACE: how long a browser gets to write its profile and exit after SIGTERM (Chromium
# takes well under a second) before it is killed.
BROWSER_CLOSE_GRACE=10
# BROWSER_QUIT_WAIT: how long browsers whose windows were closed get to quit on their own.
BROWSER_QUIT_WAIT=5
# Process names of Chromium builds: Debian's, Google's and the headless shell.
BROWSER_NAMES='chromium chrome headless_shell'
# Held while a screen's browser is restarted or forgotten, so a close cannot race a restart.
BROWSERS_LOCK=$RUN_DIR/locks/browsers

# running <pid>: the process exists and is not a zombie (one waiting to be reaped has exited).
running() {
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  case $state in Z* | "") return 1 ;; esac
}

# chromium_pids: every Chromium process of this user, helpers included. (pgrep takes one name at a
# time: it refuses patterns longer than a process name can be.)
chromium_pids() {
  for name in $BROWSER_NAMES; do pgrep -u "$(id -u)" -x "$name"; done
}

# browser_pids: the browser processes of this user's Chromium, on any screen or none (bots also
# start /opt/cubicle/browser themselves, detached). Helper processes (`--type=renderer`, GPU,
# zygotes) are left out: they go with their browser. (Helpers rewrite their command line into one
# space-separated string, so `--type=` is looked for as a word, not as an argument.)
browser_pids() {
  for pid in $(chromium_pids); do
    args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
    case " $args" in
      " ") ;;          # a zombie: it has exited already
      *" --type="*) ;; # a helper
      *) echo "$pid" ;;
    esac
  done
}

# with_browsers_lock <command...>: runs the command holding BROWSERS_LOCK (its descriptor closed in
# the command, or a browser it starts would hold the lock for ever).
with_browsers_lock() {
  mkdir -p "${BROWSERS_LOCK%/*}"
  (
    flock -w 60 9 || { echo "the browsers lock is busy" >&2; exit 3; }
    "$@" 9>&-
  ) 9>"$BROWSERS_LOCK"
}

# restart_browser: the entry point's loop calls this when the screen's browser has died; it starts
# it again unless close_browsers took the browser off the screen meanwhile.
restart_browser() {
  [ -e "$SCREEN_DIR/browser.pid" ] && ! alive "$SCREEN_DIR/browser.pid" || return 0
  echo "screen $SCREEN: browser died; restarting it" >&2
  start_browser
}

forget_screen_browsers() {
  rm -f "$RUN_DIR"/screens/*/browser.pid
}

# settle_browsers: waits until every running browser has written out what it kept in memory, without
# stopping any (another bot may be using one); returns at once when none runs.
settle_browsers() {
  [ -n "$(browser_pids)" ] || return 0
  sleep "$BROWSER_SETTLE_SECONDS"
}

# close_windows: closes every Chromium window on every running screen as a person would
# (Ctrl+Shift+W). The last window closed, Chromium quits normally, which writes its cookies; on
# SIGTERM it ends as for a logout ("SessionEnded") and leaves unwritten cookies behind.
close_windows() {
  for dir in "$RUN_DIR"/screens/*; do
    [ -e "$dir/xvfb.pid" ] && alive "$dir/xvfb.pid" || continue
    display=":$((${dir##*/} + DISPLAY_BASE))"
    for window in $(DISPLAY=$display xdotool search --onlyvisible --class chromium 2>/dev/null); do
      DISPLAY=$display xdotool windowactivate --sync "$window" key --clearmodifiers ctrl+shift+w \
        2>/dev/null || true
    done
  done
}

# close_browsers: closes every browser of this user and waits until they have exited: their windows
# first (a normal quit writes the whole profile, cookies included), then SIGTERM for any left after
# BROWSER_QUIT_WAIT (a page that asks before leaving), SIGKILL only after BROWSER_CLOSE_GRACE.
# The screens' browsers are forgotten first (their pid files removed), so the entry point's loop
# does not start them again. Idempotent; returns at once when no browser runs.
close_browsers() {
  with_browsers_lock forget_screen_browsers || return 1
  pids=$(browser_pids)
  [ -n "$pids" ] || return 0
  close_windows
  wait_gone $((BROWSER_QUIT_WAIT * 10)) $pids && pids=""
  [ -n "$pids" ] && kill -TERM $left 2>/dev/null
  if [ -n "$pids" ] && ! wait_gone $((BROWSER_CLOSE_GRACE * 10)) $pids; then
    echo "browsers still running ${BROWSER_CLOSE_GRACE} s after SIGTERM (pids$left); killing them" >&2
    kill -KILL $left 2>/dev/null
    kill -KILL $(chromium_pids) 2>/dev/null # their helpers too
    wait_gone 50 $pids || { echo "browsers did not exit (pids$left)" >&2; return 1; }
  fi
  # the helpers follow their browser within moments
  for _ in $(seq 30); do
    [ -n "$(chromium_pids)" ] || return 0
    sleep 0.1
  done
}

# wait_gone <tenths of a second> <pid...>: waits until none of the processes runs; false (with the
# ones left in $left) when time runs out.
wait_gone() {
  tries=$1
  shift
  for _ in $(seq "$tries"); do
    left=
    for pid in "$@"; do running "$pid" && left="$left $pid"; done
    [ -n "$left" ] || return 0
    sleep 0.1
  done
  return 1
}
