import { constants } from "node:os";
import type { ContainerProcess, ExitStatus, Machines } from "../machines/index.ts";

/** process.ProcessConfig as the SDK sends it and List answers it. */
export interface ProcessConfig {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

export interface EndEvent {
  exitCode: number;
  exited: boolean;
  status: string;
  error?: string;
}

/** process.ProcessEvent, in its JSON form (bytes as base64). */
export type ProcessEvent =
  | { start: { pid: number } }
  | { data: { stdout: string } | { stderr: string } }
  | { end: EndEvent }
  | { keepalive: Record<string, never> };

/** A client stream following a process's events. */
export interface Subscriber {
  /** Resolves once the client has taken the event in (or is gone): output goes at its pace. */
  deliver(event: ProcessEvent): Promise<void>;
  /** The process has ended and its end event was delivered. */
  finish(): void;
  /** The emulator lost the process's output: the stream is cut, as a dropped connection. */
  abandon(): void;
}

/** Go's names for the signals envd reports ("signal: killed"). */
const GO_SIGNAL_NAMES: Record<number, string> = {
  [constants.signals.SIGKILL]: "killed",
  [constants.signals.SIGTERM]: "terminated",
  [constants.signals.SIGINT]: "interrupt",
  [constants.signals.SIGHUP]: "hangup",
  [constants.signals.SIGPIPE]: "broken pipe",
};

/** The end event as envd makes it from Go's ProcessState: a signal's exit code is -1. */
function endEvent({ code, signal }: ExitStatus): EndEvent {
  if (code === null) {
    const status = `signal: ${GO_SIGNAL_NAMES[signal] ?? `signal ${signal}`}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  const status = `exit status ${code}`;
  return code === 0
    ? { exitCode: 0, exited: true, status }
    : { exitCode: code, exited: true, status, error: status };
}

/**
 * One process envd started: its output goes to every subscriber as it comes, at the pace of the
 * slowest; with none, it is read and dropped, so the process never blocks on a full pipe (envd keeps
 * a process running when its stream is dropped, and so does this).
 */
export class TrackedProcess {
  private readonly subscribers = new Set<Subscriber>();
  private stdinOpen: boolean;
  private killTimer: NodeJS.Timeout | undefined;
  private detached = false;

  constructor(
    readonly config: ProcessConfig,
    readonly tag: string | undefined,
    private readonly process: ContainerProcess,
    private readonly sendSignal: (pid: number, signal: NodeJS.Signals) => Promise<boolean>,
  ) {
    this.stdinOpen = process.stdin !== null;
  }

  get pid(): number {
    return this.process.pid;
  }

  /** Adds a subscriber, telling it the pid first; it gets the output from now on. */
  async subscribe(subscriber: Subscriber): Promise<void> {
    await subscriber.deliver({ start: { pid: this.pid } });
    this.subscribers.add(subscriber);
  }

  unsubscribe(subscriber: Subscriber): void {
    this.subscribers.delete(subscriber);
  }

  /** Reads the output to its end, then tells every subscriber how the process ended. */
  async pump(): Promise<void> {
    for await (const piece of this.process.output) {
      const base64 = piece.data.toString("base64");
      const event: ProcessEvent = {
        data: piece.stream === "stdout" ? { stdout: base64 } : { stderr: base64 },
      };
      await Promise.all([...this.subscribers].map((subscriber) => subscriber.deliver(event)));
    }
    clearTimeout(this.killTimer);
    if (this.detached) return;
    const exit = this.process.exit();
    if (!exit) {
      for (const subscriber of this.subscribers) subscriber.abandon();
      this.subscribers.clear();
      return;
    }
    const end = endEvent(exit);
    for (const subscriber of this.subscribers) {
      await subscriber.deliver({ end });
      subscriber.finish();
    }
    this.subscribers.clear();
  }

  /** Sends a signal to the process inside the sandbox; false when it is no longer there. */
  signal(signal: NodeJS.Signals): Promise<boolean> {
    return this.sendSignal(this.pid, signal);
  }

  /** Kills the process after `ms` (the Start request's Connect-Timeout-Ms), as envd does. */
  killAfter(ms: number): void {
    this.killTimer = setTimeout(() => void this.signal("SIGKILL").catch(() => undefined), ms);
    this.killTimer.unref();
  }

  async writeStdin(data: Buffer): Promise<void> {
    const stdin = this.process.stdin;
    if (!stdin || !this.stdinOpen) throw new Error("stdin not enabled or closed");
    await new Promise<void>((resolve, reject) =>
      stdin.write(data, (error) => (error ? reject(error) : resolve())),
    );
  }

  closeStdin(): void {
    if (!this.stdinOpen) return;
    this.stdinOpen = false;
    this.process.stdin?.end();
  }

  /** Drops the connection to the process (it keeps running) and every subscriber's stream. */
  detach(): void {
    this.detached = true;
    clearTimeout(this.killTimer);
    this.subscribers.clear();
    this.process.detach();
  }
}

/** The processes envd started in one sandbox and that have not ended yet, by pid. */
export class ProcessTable {
  private readonly processes = new Map<number, TrackedProcess>();

  constructor(
    private readonly machines: Machines,
    private readonly containerId: string,
  ) {}

  /**
   * Tracks a started process and starts reading its output, after `first` (the Start stream) has
   * subscribed, so it misses nothing.
   */
  async track(
    process: ContainerProcess,
    config: ProcessConfig,
    tag: string | undefined,
    first: Subscriber,
  ): Promise<TrackedProcess> {
    const tracked = new TrackedProcess(config, tag, process, (pid, signal) =>
      this.machines.signal(this.containerId, pid, signal.replace(/^SIG/, "")),
    );
    this.processes.set(tracked.pid, tracked);
    await tracked.subscribe(first);
    void tracked
      .pump()
      .catch(() => undefined)
      .finally(() => this.processes.delete(tracked.pid));
    return tracked;
  }

  /** The process a ProcessSelector names ({pid} or {tag}), if it is still running. */
  find(selector: { pid?: number; tag?: string }): TrackedProcess | undefined {
    if (selector.pid !== undefined) return this.processes.get(selector.pid);
    return [...this.processes.values()].find((process) => process.tag === selector.tag);
  }

  list(): TrackedProcess[] {
    return [...this.processes.values()];
  }

  /** Forgets every process (the sandbox stopped or went away); what still runs is not signalled. */
  detachAll(): void {
    for (const process of this.processes.values()) process.detach();
    this.processes.clear();
  }
}
