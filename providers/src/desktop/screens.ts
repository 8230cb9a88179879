import { type ChildProcess, spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { existsSync, promises as fs, readFileSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ActResult, type DesktopAction, type Observation, ProviderError } from "../contract/index.ts";
import { actionDeadlineMs, xdotoolArgs } from "../kernel/xdotool.ts";
import type { Machine } from "./machines.ts";
import { computerEnvironment, describeExit, isRunning, runTool, terminate } from "./processes.ts";

export const SCREEN_WIDTH = 1280;
export const SCREEN_HEIGHT = 800;
const START_TIMEOUT_MS = 15_000;
const PASSWORD_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

export interface Tools {
  xvfb: string | null;
  x11vnc: string | null;
  xdotool: string | null;
  import: string | null;
  xterm: string | null;
}

export interface Screen {
  readonly index: number;
  /** Private folder (0700) for the VNC password files. */
  readonly dir: string;
  readonly password: string;
  display: number;
  port: number;
  xvfb: ChildProcess | null;
  xterm: ChildProcess | null;
  vnc: ChildProcess | null;
  /** The input-accepting VNC server, only while someone holds control of the screen. */
  control: ControlServer | null;
}

export interface ControlServer {
  readonly child: ChildProcess;
  readonly port: number;
  readonly password: string;
}

const socketOf = (display: number) => `/tmp/.X11-unix/X${display}`;
const lockOf = (display: number) => `/tmp/.X${display}-lock`;

const failure = (message: string) => new ProviderError("PROVIDER_FAILURE", message);

function stderrTail(child: ChildProcess): () => string {
  let text = "";
  child.stderr?.setEncoding("utf8");
  // always drained: a full pipe would block the X server
  child.stderr?.on("data", (chunk: string) => {
    text = (text + chunk).slice(-1_000);
  });
  return () => text.trim();
}

/** VNC passwords are at most 8 characters; the alphabet avoids look-alike characters. */
function vncPassword(): string {
  return Array.from({ length: 8 }, () => PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)]).join("");
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `ready` until it holds, the process exits, the start is cancelled, or time runs out. */
async function waitUntil(
  ready: () => boolean | Promise<boolean>,
  child: ChildProcess,
  cancelled: () => boolean,
): Promise<"ready" | "exited" | "cancelled" | "timeout"> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (cancelled()) return "cancelled";
    if (!isRunning(child)) return "exited";
    if (await ready()) return "ready";
    if (Date.now() > deadline) return "timeout";
    await pause(50);
  }
}

function parseCursor(shell: string): { x: number; y: number } {
  const x = /^X=(\d+)$/m.exec(shell)?.[1];
  const y = /^Y=(\d+)$/m.exec(shell)?.[1];
  return { x: Number(x ?? 0), y: Number(y ?? 0) };
}

/** The x11vnc arguments both servers of a screen share (loopback only, password file auth). */
function vncArgs(display: number, port: number, passwordFile: string): string[] {
  return [
    ...["-display", `:${display}`, "-rfbport", String(port), "-localhost", "-shared", "-forever"],
    ...["-rfbauth", passwordFile, "-quiet"],
  ];
}

/**
 * Each screen is an Xvfb server with an xterm on it (so typing visibly lands somewhere; without a
 * window manager keyboard focus follows the pointer) and a view-only x11vnc for the screen proxy.
 * While someone holds control of the screen, a second x11vnc on it accepts input.
 */
export class ScreenManager {
  /** Display numbers this provider holds (even while their server starts), and which screen holds each. */
  private readonly reserved = new Map<number, Screen>();
  /** Per machine and screen, the last control change queued: changes to one screen run one at a time. */
  private readonly controlQueues = new WeakMap<Machine, Map<number, Promise<void>>>();

  constructor(
    private readonly tools: Tools,
    private readonly displayBase: number,
  ) {}

  /** The screen, started (or restarted where a part of it died) as needed. */
  ensure(machine: Machine, index: number): Promise<Screen> {
    const starting = machine.screenStarts.get(index);
    if (starting) return starting;
    const screen = machine.screens.get(index);
    if (
      screen &&
      isRunning(screen.xvfb) &&
      isRunning(screen.vnc) &&
      (isRunning(screen.xterm) || !this.tools.xterm)
    ) {
      return Promise.resolve(screen);
    }
    const start = this.start(machine, index).finally(() => machine.screenStarts.delete(index));
    machine.screenStarts.set(index, start);
    return start;
  }

  /** The display number of a machine's running screen 0, for commands' DISPLAY. */
  static displayOf(machine: Machine, index: number): number | undefined {
    const screen = machine.screens.get(index);
    return screen && isRunning(screen.xvfb) ? screen.display : undefined;
  }

  private async start(machine: Machine, index: number): Promise<Screen> {
    const generation = machine.generation;
    const cancelled = () => machine.generation !== generation || !machine.running;
    const stillWanted = () => {
      if (cancelled()) throw new ProviderError("MACHINE_STOPPED", "this computer was stopped");
    };

    let screen = machine.screens.get(index);
    if (screen && !isRunning(screen.xvfb)) {
      // the X server died: everything on it went with it, so start over on a fresh display
      await this.teardown(screen);
      machine.screens.delete(index);
      screen = undefined;
    }
    if (!screen) {
      screen = {
        index,
        dir: await fs.mkdtemp(join(tmpdir(), "cubicle-screen-")),
        password: vncPassword(),
        display: -1,
        port: 0,
        xvfb: null,
        xterm: null,
        vnc: null,
        control: null,
      };
      // registered before anything starts, so a concurrent stop finds and kills every part
      machine.screens.set(index, screen);
    }
    try {
      stillWanted();
      if (!isRunning(screen.xvfb)) await this.startXvfb(machine, screen, cancelled);
      stillWanted();
      if (!isRunning(screen.xterm) && this.tools.xterm) {
        screen.xterm = spawn(this.tools.xterm, ["-geometry", "120x40+0+0"], {
          cwd: machine.files.home,
          env: computerEnvironment(machine.files.home, screen.display),
          detached: true,
          stdio: "ignore",
        });
        screen.xterm.on("error", () => undefined);
      }
      if (!isRunning(screen.vnc)) await this.startVnc(machine, screen, cancelled);
      stillWanted();
      return screen;
    } catch (error) {
      await this.teardown(screen);
      if (machine.screens.get(index) === screen) machine.screens.delete(index);
      throw error;
    }
  }

  private allocateDisplay(screen: Screen): number {
    for (let display = this.displayBase; display < this.displayBase + 1_000; display++) {
      if (this.reserved.has(display) || existsSync(socketOf(display)) || existsSync(lockOf(display)))
        continue;
      this.reserved.set(display, screen);
      return display;
    }
    throw failure("no free X display number");
  }

  /** Gives the number back, removing the lock and socket a hard-killed server of ours left behind. */
  private releaseDisplay(screen: Screen, display: number, server: ChildProcess | null): void {
    // a stale release (the number already went to another screen) must not free someone else's
    if (display < 0 || this.reserved.get(display) !== screen) return;
    if (server?.pid !== undefined) {
      try {
        if (Number(readFileSync(lockOf(display), "utf8").trim()) === server.pid) {
          rmSync(lockOf(display), { force: true });
          rmSync(socketOf(display), { force: true });
        }
      } catch {
        // no lock: the server cleaned up after itself
      }
    }
    this.reserved.delete(display);
  }

  private async startXvfb(machine: Machine, screen: Screen, cancelled: () => boolean): Promise<void> {
    const xvfb = this.tools.xvfb;
    if (!xvfb) throw new ProviderError("GRAPHICAL_UNAVAILABLE", "Xvfb is not installed on this host");
    for (let attempt = 0; attempt < 5; attempt++) {
      const display = this.allocateDisplay(screen);
      const child = spawn(
        xvfb,
        [`:${display}`, "-screen", "0", `${SCREEN_WIDTH}x${SCREEN_HEIGHT}x24`, "-nolisten", "tcp"],
        {
          cwd: machine.files.home,
          env: computerEnvironment(machine.files.home),
          detached: true,
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      child.on("error", () => undefined);
      screen.display = display;
      screen.xvfb = child;
      const stderr = stderrTail(child);
      const outcome = await waitUntil(() => existsSync(socketOf(display)), child, cancelled);
      if (outcome === "ready") return;
      await terminate(child);
      this.releaseDisplay(screen, display, child);
      screen.display = -1;
      screen.xvfb = null;
      if (outcome === "cancelled") return;
      if (outcome === "timeout") throw failure(`Xvfb :${display} did not start: ${stderr() || "no socket"}`);
      // exited: most likely another X server took the number first; try the next one
    }
    throw failure("Xvfb could not start on any display");
  }

  private async startVnc(machine: Machine, screen: Screen, cancelled: () => boolean): Promise<void> {
    const x11vnc = this.tools.x11vnc;
    if (!x11vnc) throw new ProviderError("GRAPHICAL_UNAVAILABLE", "x11vnc is not installed on this host");
    const env = computerEnvironment(machine.files.home, screen.display);
    const passwordFile = join(screen.dir, "passwd");
    if (!existsSync(passwordFile)) {
      const stored = await runTool(x11vnc, ["-storepasswd", screen.password, passwordFile], {
        env,
        timeoutMs: 10_000,
        track: machine.groups,
      });
      if (stored.code !== 0) throw failure(`x11vnc could not store the screen password: ${stored.stderr}`);
      await fs.chmod(passwordFile, 0o600);
    }
    for (let attempt = 0; attempt < 3; attempt++) {
      if (cancelled()) return;
      const port = await freePort();
      // a viewer sees the screen and nothing else: no input, and no clipboard either way (-nosel:
      // x11vnc neither sends PRIMARY, CLIPBOARD or the cut buffer nor sets them from a viewer)
      const child = spawn(x11vnc, [...vncArgs(screen.display, port, passwordFile), "-viewonly", "-nosel"], {
        cwd: machine.files.home,
        env,
        detached: true,
        stdio: ["ignore", "ignore", "pipe"],
      });
      child.on("error", () => undefined);
      screen.vnc = child;
      screen.port = port;
      const stderr = stderrTail(child);
      const outcome = await waitUntil(() => canConnect(port), child, cancelled);
      if (outcome === "ready" || outcome === "cancelled") return;
      await terminate(child);
      screen.vnc = null;
      if (outcome === "timeout") throw failure(`x11vnc did not start: ${stderr() || "port never opened"}`);
      // exited: the port was taken between choosing and binding it; choose again
    }
    throw failure("x11vnc could not start");
  }

  /**
   * Starts the screen's control server with `password`, or keeps the one running with it (its
   * connections stay up); a server with another password is replaced (its connections drop).
   */
  openControl(machine: Machine, index: number, password: string): Promise<ControlServer> {
    return this.serially(machine, index, async () => {
      const screen = await this.ensure(machine, index);
      const current = screen.control;
      if (current && isRunning(current.child) && current.password === password) return current;
      await this.stopControl(screen);
      return this.startControl(machine, screen, password);
    });
  }

  /** Stops the screen's control server, dropping its connections; nothing to do when none runs. */
  closeControl(machine: Machine, index: number): Promise<void> {
    return this.serially(machine, index, async () => {
      const screen = machine.screens.get(index);
      if (screen) await this.stopControl(screen);
    });
  }

  private serially<T>(machine: Machine, index: number, task: () => Promise<T>): Promise<T> {
    let queues = this.controlQueues.get(machine);
    if (!queues) {
      queues = new Map();
      this.controlQueues.set(machine, queues);
    }
    const result = (queues.get(index) ?? Promise.resolve()).then(task);
    const done = result.then(
      () => undefined,
      () => undefined,
    );
    queues.set(index, done);
    void done.then(() => {
      if (queues.get(index) === done) queues.delete(index);
    });
    return result;
  }

  private async startControl(machine: Machine, screen: Screen, password: string): Promise<ControlServer> {
    const x11vnc = this.tools.x11vnc;
    if (!x11vnc) throw new ProviderError("GRAPHICAL_UNAVAILABLE", "x11vnc is not installed on this host");
    const generation = machine.generation;
    const cancelled = () =>
      machine.generation !== generation || !machine.running || machine.screens.get(screen.index) !== screen;
    const stillWanted = () => {
      if (cancelled()) throw new ProviderError("MACHINE_STOPPED", "this computer was stopped");
    };
    const env = computerEnvironment(machine.files.home, screen.display);
    const passwordFile = join(screen.dir, "control.passwd");
    await fs.rm(passwordFile, { force: true });
    const stored = await runTool(x11vnc, ["-storepasswd", password, passwordFile], {
      env,
      timeoutMs: 10_000,
      track: machine.groups,
    });
    stillWanted();
    if (stored.code !== 0) throw failure(`x11vnc could not store the control password: ${stored.stderr}`);
    await fs.chmod(passwordFile, 0o600);
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      stillWanted();
      // no -viewonly: this server passes keyboard and pointer input (and the clipboard) to the
      // screen. X11VNC_AVOID_WINDOWS=never: x11vnc would otherwise wait up to 45 s after each new
      // client (for a display manager, which a screen here never has) before it can own the
      // clipboard, so a paste right after taking control would be lost.
      const child = spawn(x11vnc, vncArgs(screen.display, port, passwordFile), {
        cwd: machine.files.home,
        env: { ...env, X11VNC_AVOID_WINDOWS: "never" },
        detached: true,
        stdio: ["ignore", "ignore", "pipe"],
      });
      child.on("error", () => undefined);
      const control: ControlServer = { child, port, password };
      // recorded at once, so a concurrent stop of the machine or screen kills it too
      screen.control = control;
      const stderr = stderrTail(child);
      const outcome = await waitUntil(() => canConnect(port), child, cancelled);
      if (outcome === "ready") return control;
      await terminate(child);
      if (screen.control === control) screen.control = null;
      stillWanted();
      if (outcome === "timeout") {
        throw failure(`the control x11vnc did not start: ${stderr() || "port never opened"}`);
      }
      // exited: the port was taken between choosing and binding it; choose again
    }
    throw failure("the control x11vnc could not start");
  }

  private async stopControl(screen: Screen): Promise<void> {
    const control = screen.control;
    screen.control = null;
    if (control) await terminate(control.child);
    await fs.rm(join(screen.dir, "control.passwd"), { force: true });
  }

  /** Stops every part of a screen and frees its display number and password folder. */
  async teardown(screen: Screen): Promise<void> {
    const { vnc, xterm, xvfb, control } = screen;
    screen.control = null;
    await Promise.all([
      vnc ? terminate(vnc) : null,
      xterm ? terminate(xterm) : null,
      control ? terminate(control.child) : null,
    ]);
    // the X server last, with SIGTERM first so it removes its own lock and socket
    if (xvfb) await terminate(xvfb);
    this.releaseDisplay(screen, screen.display, xvfb);
    screen.display = -1;
    screen.xvfb = null;
    screen.xterm = null;
    screen.vnc = null;
    await fs.rm(screen.dir, { recursive: true, force: true });
  }

  /** Stops all of a machine's screens, including ones still starting. */
  async stopAll(machine: Machine): Promise<void> {
    const screens = [...machine.screens.values()];
    machine.screens.clear();
    await Promise.all(screens.map((screen) => this.teardown(screen)));
    await Promise.allSettled([...machine.screenStarts.values()]);
  }

  async observe(machine: Machine, index: number): Promise<Observation> {
    const screen = await this.ensure(machine, index);
    const importTool = this.tools.import;
    if (!importTool) throw failure("ImageMagick's import is not installed on this host");
    const env = computerEnvironment(machine.files.home, screen.display);
    const [shot, [cursor, activeWindow]] = await Promise.all([
      runTool(importTool, ["-display", `:${screen.display}`, "-window", "root", "png:-"], {
        env,
        timeoutMs: 15_000,
        track: machine.groups,
      }),
      this.cursor(machine, env).then(async (at) => [at, await this.activeWindow(machine, env, at)] as const),
    ]);
    const png = shot.stdout;
    if (shot.code !== 0 || png.length < 24 || png.toString("latin1", 12, 16) !== "IHDR") {
      throw failure(`the screenshot failed: ${shot.stderr || describeExit(shot)}`);
    }
    return {
      png: new Uint8Array(png.buffer, png.byteOffset, png.byteLength),
      // the size the image itself declares (IHDR), not the one asked of Xvfb
      width: png.readUInt32BE(16),
      height: png.readUInt32BE(20),
      cursor,
      activeWindow,
    };
  }

  private async xdotool(
    machine: Machine,
    env: Record<string, string>,
    args: string[],
    timeoutMs = 10_000,
  ): Promise<{ ok: boolean; stdout: string; error: string }> {
    const xdotool = this.tools.xdotool;
    if (!xdotool) return { ok: false, stdout: "", error: "xdotool is not installed on this host" };
    const result = await runTool(xdotool, args, { env, timeoutMs, track: machine.groups });
    return {
      ok: result.code === 0,
      stdout: result.stdout.toString("utf8"),
      error: result.stderr.trim() || describeExit(result),
    };
  }

  private async cursor(machine: Machine, env: Record<string, string>): Promise<{ x: number; y: number }> {
    const where = await this.xdotool(machine, env, ["getmouselocation", "--shell"]);
    if (!where.ok) throw failure(`the cursor position could not be read: ${where.error}`);
    return parseCursor(where.stdout);
  }

  private async activeWindow(
    machine: Machine,
    env: Record<string, string>,
    cursor: { x: number; y: number },
  ): Promise<string | null> {
    const active = await this.xdotool(machine, env, ["getactivewindow", "getwindowname"]);
    if (active.ok) return active.stdout.replace(/\n$/, "");
    // No window manager, so no _NET_ACTIVE_WINDOW: keyboard focus follows the pointer, and the
    // window typing reaches is the topmost top-level window under it.
    const tops = await this.xdotool(machine, env, [
      ...["search", "--maxdepth", "1", "--onlyvisible", "--name", ""],
      ...["getwindowgeometry", "--shell", "%@"],
    ]);
    if (!tops.ok) return null;
    // listed bottom to top, the root window first
    const windows = tops.stdout
      .split(/^(?=WINDOW=)/m)
      .slice(1)
      .map((block) => {
        const field = (name: string) =>
          Number(new RegExp(`^${name}=(\\d+)$`, "m").exec(block)?.[1] ?? Number.NaN);
        return {
          id: field("WINDOW"),
          x: field("X"),
          y: field("Y"),
          width: field("WIDTH"),
          height: field("HEIGHT"),
        };
      });
    const under = windows.findLast(
      (w) => cursor.x >= w.x && cursor.x < w.x + w.width && cursor.y >= w.y && cursor.y < w.y + w.height,
    );
    if (!under || Number.isNaN(under.id)) return null;
    const name = await this.xdotool(machine, env, ["getwindowname", String(under.id)]);
    return name.ok ? name.stdout.replace(/\n$/, "") : null;
  }

  async act(machine: Machine, index: number, actions: DesktopAction[]): Promise<ActResult> {
    const screen = await this.ensure(machine, index);
    const env = computerEnvironment(machine.files.home, screen.display);
    const total = actions.length;
    for (const [completed, action] of actions.entries()) {
      if (!machine.running) return { completed, total, error: "the computer was stopped" };
      const args = xdotoolArgs(action);
      if (args === null) {
        if (action.type === "wait") await pause(action.ms);
        continue;
      }
      const result = await this.xdotool(machine, env, args, actionDeadlineMs(action));
      if (!result.ok)
        return {
          completed,
          total,
          error: `action ${completed + 1} (${action.type}) failed: ${result.error}`,
        };
    }
    return { completed: total, total };
  }
}
