import {
  type CommandEvent,
  EXIT_ABORTED,
  EXIT_TIMED_OUT,
  OUTPUT_TRUNCATED_MARKER,
} from "../../src/contract/index.ts";
import { runShell, ShellKilled, type ShellMachine, type ShellOutput } from "./shell.ts";

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Consecutive output is merged into one event up to this size, so tiny writes stay cheap. */
const MAX_EVENT_CHARS = 65_536;
/** setTimeout's ceiling; longer delays would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The longest prefix of `text` that fits in `bytes` of UTF-8 without splitting a character. */
export function utf8Prefix(text: string, bytes: number): string {
  const encoded = Buffer.from(text, "utf8");
  if (encoded.length <= bytes) return text;
  let end = Math.max(0, bytes);
  while (end > 0 && ((encoded[end] ?? 0) & 0xc0) === 0x80) end--;
  return encoded.subarray(0, end).toString("utf8");
}

/** Events waiting for the consumer; the output cap bounds how much can pile up. */
class EventQueue {
  private readonly items: CommandEvent[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  private failure: { error: unknown } | null = null;

  push(event: CommandEvent): void {
    if (this.closed) return;
    const last = this.items.at(-1);
    if (
      last &&
      (last.type === "stdout" || last.type === "stderr") &&
      last.type === event.type &&
      last.data !== OUTPUT_TRUNCATED_MARKER &&
      event.data !== OUTPUT_TRUNCATED_MARKER &&
      last.data.length + event.data.length <= MAX_EVENT_CHARS
    ) {
      last.data += event.data;
    } else {
      this.items.push(event);
    }
    this.notify();
  }

  close(): void {
    this.closed = true;
    this.notify();
  }

  fail(error: unknown): void {
    this.failure = { error };
    this.close();
  }

  async next(): Promise<CommandEvent | undefined> {
    for (;;) {
      const item = this.items.shift();
      if (item) return item;
      if (this.failure) throw this.failure.error;
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** stdout and stderr together under one byte cap; past it, one marker and then nothing. */
class CappedOutput implements ShellOutput {
  private used = 0;
  private ended = false;
  truncated = false;

  constructor(
    private readonly cap: number,
    private readonly queue: EventQueue,
  ) {}

  get closed(): boolean {
    return this.ended || this.truncated;
  }

  end(): void {
    this.ended = true;
  }

  write(stream: "stdout" | "stderr", text: string): void {
    if (this.closed || text === "") return;
    const size = Buffer.byteLength(text, "utf8");
    if (this.used + size <= this.cap) {
      this.used += size;
      this.queue.push({ type: stream, data: text });
      return;
    }
    const kept = utf8Prefix(text, this.cap - this.used);
    if (kept !== "") this.queue.push({ type: stream, data: kept });
    this.used = this.cap;
    this.truncated = true;
    this.queue.push({ type: "stdout", data: OUTPUT_TRUNCATED_MARKER });
  }
}

export interface RunSpec {
  machine: ShellMachine;
  command: string;
  cwd: string;
  vars: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  maxOutputBytes?: number;
}

/**
 * One command's events. The first of the shell's end, the timeout and the caller's abort decides
 * the exit; a timeout or abort also kills every process the command started. A consumer that
 * stops iterating early counts as an abort.
 */
export async function* runCommand(spec: RunSpec): AsyncGenerator<CommandEvent> {
  const queue = new EventQueue();
  const output = new CappedOutput(spec.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, queue);
  const tree = new AbortController();
  let finished = false;

  const finish = (code: number, message?: string) => {
    if (finished) return;
    finished = true;
    output.end();
    if (message !== undefined) tree.abort();
    queue.push(
      message === undefined
        ? { type: "exit", code, truncated: output.truncated }
        : { type: "exit", code, message, truncated: output.truncated },
    );
    queue.close();
  };
  const timer = setTimeout(
    () => finish(EXIT_TIMED_OUT, `command timed out after ${spec.timeoutMs} ms`),
    Math.min(Math.max(0, spec.timeoutMs), MAX_TIMER_MS),
  );
  const onAbort = () => finish(EXIT_ABORTED, "command aborted");
  spec.signal?.addEventListener("abort", onAbort, { once: true });

  try {
    if (spec.signal?.aborted) {
      onAbort();
    } else {
      runShell(spec.command, {
        machine: spec.machine,
        output,
        vars: spec.vars,
        cwd: spec.cwd,
        signal: tree.signal,
      }).then(
        (code) => finish(code),
        (error: unknown) => {
          if (error instanceof ShellKilled) return;
          finished = true;
          output.end();
          tree.abort();
          queue.fail(error);
        },
      );
    }
    for (;;) {
      const event = await queue.next();
      if (!event) return;
      yield event;
    }
  } finally {
    clearTimeout(timer);
    spec.signal?.removeEventListener("abort", onAbort);
    if (!finished) {
      finished = true;
      output.end();
      tree.abort();
    }
  }
}
