/**
 * A real desktop for tests: Xvfb with x11vnc in front of it, as in a Docker computer, but without
 * -viewonly or -nosel, so that what a test observes is the proxy's own filtering. Needs Xvfb, x11vnc
 * and xdotool (and xterm to select text).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";

const run = promisify(execFile);
const STARTUP_TIMEOUT_MS = 15_000;

export interface TestDesktop {
  display: string;
  /** x11vnc's port on 127.0.0.1. */
  port: number;
  password: string;
  /** Where the X pointer is, as reported by xdotool. */
  pointer(): Promise<{ x: number; y: number }>;
  /** Moves the X pointer directly, bypassing VNC. */
  movePointer(x: number, y: number): Promise<void>;
  /**
   * Shows `text` in an xterm and selects it with a triple click, as a person would: into PRIMARY,
   * or into CLIPBOARD (an xterm set to select to the clipboard, as a copy does).
   */
  select(text: string, selection: "PRIMARY" | "CLIPBOARD"): Promise<void>;
  stop(): Promise<void>;
}

/** Processes still running, killed if the test process exits without stopping them. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export async function startDesktop(options: { password?: string } = {}): Promise<TestDesktop> {
  const password = options.password ?? "cubicle1";
  const directory = await mkdtemp(join(tmpdir(), "cubicle-rfb-"));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.reverse().map(terminate));
    await rm(directory, { recursive: true, force: true });
  };
  try {
    const { child: xvfb, display } = await startXvfb();
    children.push(xvfb);
    const passwordFile = join(directory, "passwd");
    await run("x11vnc", ["-storepasswd", password, passwordFile]);
    const { child: x11vnc, port } = await startX11vnc(display, passwordFile);
    children.push(x11vnc);
    const xdotool = (...args: string[]) =>
      run("xdotool", args, { env: { ...process.env, DISPLAY: display } });
    const pointer = async () => {
      const { stdout } = await xdotool("getmouselocation", "--shell");
      return { x: Number(/^X=(\d+)$/m.exec(stdout)?.[1]), y: Number(/^Y=(\d+)$/m.exec(stdout)?.[1]) };
    };
    const movePointer = async (x: number, y: number) => {
      await xdotool("mousemove", String(x), String(y));
    };
    const select = async (text: string, selection: "PRIMARY" | "CLIPBOARD") => {
      const title = `cubicle-select-${children.length}`;
      const toClipboard = selection === "CLIPBOARD" ? ["-xrm", "XTerm*selectToClipboard: true"] : [];
      const args = [
        "-T",
        title,
        "-geometry",
        "40x4+0+0",
        ...toClipboard,
        "-e",
        "sh",
        "-c",
        'echo "$0"; exec sleep 300',
        text,
      ];
      children.push(
        track(spawn("xterm", args, { env: { ...process.env, DISPLAY: display }, stdio: "ignore" })),
      );
      const { stdout } = await xdotool("search", "--sync", "--onlyvisible", "--name", `^${title}$`);
      const window = stdout.split("\n")[0] ?? "";
      await xdotool(
        "mousemove",
        "--window",
        window,
        "12",
        "8",
        "click",
        "--repeat",
        "3",
        "--delay",
        "100",
        "1",
      );
    };
    return { display, port, password, pointer, movePointer, select, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Xvfb picks a free display itself and reports it on a pipe (-displayfd) once it accepts clients. */
async function startXvfb(): Promise<{ child: ChildProcess; display: string }> {
  const child = track(
    spawn("Xvfb", ["-displayfd", "3", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], {
      stdio: ["ignore", "ignore", "pipe", "pipe"],
    }),
  );
  const number = await waitForOutput(child, child.stdio[3] as Readable, /^(\d+)\n/, "Xvfb");
  return { child, display: `:${number}` };
}

async function startX11vnc(
  display: string,
  passwordFile: string,
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const args = ["-display", display, "-rfbport", String(port), "-localhost", "-shared", "-forever"];
  const child = track(
    spawn("x11vnc", [...args, "-rfbauth", passwordFile, "-quiet"], { stdio: ["ignore", "pipe", "pipe"] }),
  );
  // x11vnc prints PORT=<n> once it listens.
  const listening = Number(await waitForOutput(child, child.stdout, /^PORT=(\d+)$/m, "x11vnc"));
  if (listening !== port) throw new Error(`x11vnc listens on ${listening}, not ${port}`);
  return { child, port };
}

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

async function waitForOutput(
  child: ChildProcess,
  output: Readable | null | undefined,
  pattern: RegExp,
  name: string,
): Promise<string> {
  if (!output) throw new Error(`${name} has no output to watch`);
  let seen = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`${name} did not start in time`), STARTUP_TIMEOUT_MS);
    const fail = (message: string) => {
      clearTimeout(timer);
      reject(new Error(`${message}\n${stderr}`));
    };
    child.once("exit", (code) => fail(`${name} exited with ${code}`));
    child.once("error", (error) => fail(`${name}: ${error.message}`));
    output.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
  await exited;
  clearTimeout(timer);
}
