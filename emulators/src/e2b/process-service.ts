/**
 * envd's process.Process service. Start and Connect stream a process's events; the others are
 * unary. A process runs as the calling user through `docker exec`; its pid is the one inside the
 * sandbox, so `kill <pid>` from another command reaches it too.
 */
import { WorkingDirMissing } from "../machines/index.ts";
import { ConnectError, type ServerStream } from "./connect.ts";
import type { ProcessConfig, ProcessEvent, Subscriber, TrackedProcess } from "./process-table.ts";
import type { Sandbox } from "./sandbox.ts";
import { resolvePath, type SandboxUser } from "./users.ts";

export interface StreamCall {
  sandbox: Sandbox;
  user: SandboxUser;
  message: Record<string, unknown>;
  stream: ServerStream;
  /** Connect-Timeout-Ms: the stream's deadline and, for Start, the process's. */
  timeoutMs: number | null;
  /** Keepalive-Ping-Interval: the longest the stream stays silent. */
  keepaliveMs: number;
}

/** A client stream following a process: keepalives while it is quiet, its deadline, its end. */
class StreamSubscriber implements Subscriber {
  private keepalive: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly release: () => void;

  constructor(
    private readonly call: StreamCall,
    private readonly onGone: () => void,
  ) {
    this.release = call.sandbox.hold(call.stream);
    call.stream.onClose(() => this.stop());
  }

  deliver(event: ProcessEvent): Promise<void> {
    this.armKeepalive();
    return this.call.stream.send({ event });
  }

  finish(): void {
    this.stop();
    this.call.stream.end();
  }

  abandon(): void {
    this.stop();
    this.call.stream.abort();
  }

  /** Ends the stream with deadline_exceeded after `ms`, as the client's timeout asked. */
  expireAfter(ms: number): void {
    this.deadline = setTimeout(() => {
      this.stop();
      this.call.stream.end(
        new ConnectError("deadline_exceeded", `the request exceeded its ${ms} ms deadline`),
      );
    }, ms);
  }

  private armKeepalive(): void {
    clearTimeout(this.keepalive);
    if (this.stopped) return;
    this.keepalive = setTimeout(() => void this.deliver({ keepalive: {} }), this.call.keepaliveMs);
  }

  private stop(): void {
    this.stopped = true;
    clearTimeout(this.keepalive);
    clearTimeout(this.deadline);
    this.release();
    this.onGone();
  }
}

function object(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new ConnectError("invalid_argument", `${name} must be an object`);
  }
  return value as Record<string, unknown>;
}

function processConfig(value: unknown): ProcessConfig {
  const config = object(value, "process");
  const { cmd, args = [], envs = {}, cwd } = config;
  if (typeof cmd !== "string" || cmd === "")
    throw new ConnectError("invalid_argument", "process.cmd is required");
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
    throw new ConnectError("invalid_argument", "process.args must be strings");
  }
  const envMap = object(envs, "process.envs");
  if (!Object.values(envMap).every((entry) => typeof entry === "string")) {
    throw new ConnectError("invalid_argument", "process.envs must map names to strings");
  }
  if (cwd !== undefined && typeof cwd !== "string") throw new ConnectError("invalid_argument", "process.cwd");
  return { cmd, args, envs: envMap as Record<string, string>, ...(cwd ? { cwd } : {}) };
}

/** ProcessSelector: `{pid}` or `{tag}`. */
function selectorOf(value: unknown): { pid?: number; tag?: string } {
  const selector = object(value, "process");
  if (selector.pid !== undefined) {
    const pid = Number(selector.pid);
    if (!Number.isInteger(pid)) throw new ConnectError("invalid_argument", "process.pid must be a number");
    return { pid };
  }
  if (typeof selector.tag === "string") return { tag: selector.tag };
  throw new ConnectError("invalid_argument", "a process selector needs a pid or a tag");
}

function trackedOf(sandbox: Sandbox, value: unknown): TrackedProcess {
  const selector = selectorOf(value);
  const process = sandbox.processes.find(selector);
  if (!process) {
    const name = selector.pid !== undefined ? `pid ${selector.pid}` : `tag '${selector.tag}'`;
    throw new ConnectError("not_found", `process with ${name} not found`);
  }
  return process;
}

/** Start: runs the command and streams start, its output, then its end. */
export async function startProcess(call: StreamCall): Promise<void> {
  const { sandbox, user, message } = call;
  if (message.pty) throw new ConnectError("unimplemented", "pty processes are not emulated");
  const config = processConfig(message.process);
  const tag = typeof message.tag === "string" ? message.tag : undefined;
  let process: Awaited<ReturnType<Sandbox["spawn"]>>;
  try {
    process = await sandbox.spawn({
      argv: [config.cmd, ...config.args],
      user: user.name,
      // envd's environment: the sandbox's (the container's here) with the user's, then the request's
      env: { HOME: user.home, USER: user.name, LOGNAME: user.name, ...config.envs },
      cwd: resolvePath(config.cwd ?? "", user),
      // envd opens stdin unless the request says false
      stdin: message.stdin !== false,
    });
  } catch (error) {
    if (error instanceof WorkingDirMissing) throw new ConnectError("invalid_argument", error.message);
    throw error;
  }
  let tracked: TrackedProcess | undefined;
  const subscriber = new StreamSubscriber(call, () => tracked?.unsubscribe(subscriber));
  tracked = await sandbox.processes.track(process, config, tag, subscriber);
  if (call.timeoutMs) {
    // envd ties the process to the request's deadline (not to the connection, which may drop)
    tracked.killAfter(call.timeoutMs);
    subscriber.expireAfter(call.timeoutMs);
  }
}

/** Connect: follows a running process's output again, from now on. */
export async function connectProcess(call: StreamCall): Promise<void> {
  const tracked = trackedOf(call.sandbox, call.message.process);
  const subscriber = new StreamSubscriber(call, () => tracked.unsubscribe(subscriber));
  await tracked.subscribe(subscriber);
  if (call.timeoutMs) subscriber.expireAfter(call.timeoutMs);
}

const SIGNALS: Record<string, NodeJS.Signals> = {
  SIGNAL_SIGKILL: "SIGKILL",
  SIGNAL_SIGTERM: "SIGTERM",
  "9": "SIGKILL",
  "15": "SIGTERM",
};

export async function processCall(method: string, sandbox: Sandbox, message: Record<string, unknown>) {
  switch (method) {
    case "List":
      return {
        processes: sandbox.processes.list().map((process) => ({
          config: process.config,
          pid: process.pid,
          ...(process.tag !== undefined ? { tag: process.tag } : {}),
        })),
      };
    case "SendSignal": {
      const signal = SIGNALS[String(message.signal)];
      if (!signal) throw new ConnectError("invalid_argument", `unsupported signal ${String(message.signal)}`);
      const process = trackedOf(sandbox, message.process);
      if (!(await process.signal(signal))) {
        throw new ConnectError("not_found", `process with pid ${process.pid} not found`);
      }
      return {};
    }
    case "SendInput": {
      const process = trackedOf(sandbox, message.process);
      const input = object(message.input, "input");
      if (typeof input.stdin !== "string")
        throw new ConnectError("unimplemented", "only stdin input is emulated");
      await process.writeStdin(Buffer.from(input.stdin, "base64")).catch((error: Error) => {
        throw new ConnectError("failed_precondition", error.message);
      });
      return {};
    }
    case "CloseStdin":
      trackedOf(sandbox, message.process).closeStdin();
      return {};
    default:
      throw new ConnectError("unimplemented", `process.Process/${method} is not emulated`);
  }
}
