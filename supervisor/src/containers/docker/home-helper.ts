import type { Duplex } from "node:stream";
import { FrameDemuxer } from "@cubicle/host/docker-frames";
import { HOME_FILES_SCRIPT } from "@cubicle/providers/kernel";
import type Docker from "dockerode";
import { CONTAINER_HOME } from "../../paths.ts";
import { SupervisorProblem } from "../../problems.ts";
import { exitCodeOf, programFailure, startExec } from "./exec.ts";

const STDERR_TAIL = 4_096;

/**
 * One run of a program in the computer as its user, read as a stream: its first stdout line, then
 * the rest a chunk at a time (never held whole), then its exit status.
 */
export class HelperRun {
  private buffered = Buffer.alloc(0);
  private stderrTail = "";
  private readonly source: AsyncGenerator<Buffer>;

  private constructor(
    private readonly container: Docker.Container,
    private readonly exec: Docker.Exec,
    private readonly stream: Duplex,
    private readonly what: string,
    private readonly onStderr?: (text: string) => void,
  ) {
    this.source = this.stdout();
    // a write after the program ended fails here too; reads report the failure, never a crash
    stream.on("error", () => undefined);
  }

  /** The kernel's home-files.pl on the computer's home, with `op` and its arguments; `timeoutSeconds` is enforced inside the computer. */
  static files(
    container: Docker.Container,
    args: string[],
    options: { stdin?: boolean; timeoutSeconds?: number } = {},
  ): Promise<HelperRun> {
    const cmd = ["perl", "-e", HOME_FILES_SCRIPT, "--", CONTAINER_HOME, ...args];
    return HelperRun.start(container, `file operation ${args[0]} on ${args[1] || "."}`, cmd, options);
  }

  static async start(
    container: Docker.Container,
    what: string,
    cmd: string[],
    options: { stdin?: boolean; timeoutSeconds?: number; onStderr?: (text: string) => void } = {},
  ): Promise<HelperRun> {
    const timed = options.timeoutSeconds
      ? ["timeout", "-s", "KILL", String(options.timeoutSeconds), ...cmd]
      : cmd;
    const { exec, stream } = await startExec(container, timed, { stdin: options.stdin ?? false });
    return new HelperRun(container, exec, stream, what, options.onStderr);
  }

  private async *stdout(): AsyncGenerator<Buffer> {
    const demux = new FrameDemuxer();
    for await (const chunk of this.stream as AsyncIterable<Buffer>) {
      for (const piece of demux.push(chunk)) {
        if (piece.stream === "stderr") {
          const text = piece.data.toString("utf8");
          this.onStderr?.(text);
          this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL);
        } else {
          yield Buffer.from(piece.data);
        }
      }
    }
  }

  /** The next stdout line, without its newline; a failure when the output ends first. */
  async line(): Promise<string> {
    for (;;) {
      const newline = this.buffered.indexOf(0x0a);
      if (newline >= 0) {
        const line = this.buffered.subarray(0, newline).toString("utf8");
        this.buffered = this.buffered.subarray(newline + 1);
        return line;
      }
      const next = await this.source.next();
      if (next.done) throw await this.failure();
      this.buffered = Buffer.concat([this.buffered, next.value]);
    }
  }

  /** The rest of stdout, a chunk at a time. */
  async *rest(): AsyncGenerator<Buffer> {
    if (this.buffered.length > 0) {
      const first = this.buffered;
      this.buffered = Buffer.alloc(0);
      yield first;
    }
    for (;;) {
      const next = await this.source.next();
      if (next.done) return;
      yield next.value;
    }
  }

  /** The rest of stdout whole, refused past `maxBytes`. */
  async collect(maxBytes: number): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of this.rest()) {
      size += chunk.length;
      if (size > maxBytes) {
        this.close();
        throw new SupervisorProblem("COMPUTER_FAILURE", `${this.what} wrote more than ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  }

  /**
   * Writes to the program's stdin, honouring back-pressure. A stream that closes instead of
   * draining (the computer was killed) ends the wait too; the next read reports why.
   */
  async write(chunk: Uint8Array): Promise<void> {
    if (this.stream.write(chunk) || this.stream.destroyed) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.stream.off("drain", done).off("close", done);
        resolve();
      };
      this.stream.once("drain", done).once("close", done);
    });
  }

  /** Ends stdin (the program reads end-of-file), keeping stdout open. */
  endInput(): void {
    this.stream.end();
  }

  /** Waits for the program to end; a failure unless it exited 0 (or with a code in `alsoFine`). */
  async finish(options: { alsoFine?: number[] } = {}): Promise<void> {
    for await (const _ of this.rest()) {
      // drained: a program blocked on a full pipe would never exit
    }
    const code = await exitCodeOf(this.exec);
    if (code !== 0 && !(code !== null && options.alsoFine?.includes(code))) throw await this.failure(code);
  }

  private async failure(known?: number | null): Promise<SupervisorProblem> {
    const code = known === undefined ? await exitCodeOf(this.exec) : known;
    const stderr = this.stderrTail.trim();
    return programFailure(
      this.container,
      this.what,
      new SupervisorProblem(
        "COMPUTER_FAILURE",
        `${this.what} failed (exit ${code ?? "unknown"})${stderr ? `: ${stderr}` : ""}`,
      ),
    );
  }

  /** Drops the connection; the program sees its pipes close. */
  close(): void {
    this.stream.destroy();
  }
}
