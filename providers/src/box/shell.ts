import { constants } from "node:os";
import { ProviderError } from "../contract/index.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { commandLine } from "../remote/command-line.ts";
import type { SandboxShell, ShellResult } from "../remote/shell.ts";
import type { BoxClient } from "./client.ts";
import {
  type CommandFinished,
  type CommandStarted,
  type CommandStatus,
  MAX_COMMAND_SECONDS,
} from "./wire.ts";

/**
 * Bytes moved per request. Box caps a command's printed output (and says so); base64 of this
 * much, for up to two files, stays well inside it, and it bounds what the api holds at once.
 */
const PIECE_BYTES = 384 * 1024;
/** A request for a command runs a little past the command's own time limit, which Box enforces. */
const COMMAND_MARGIN_MS = 30_000;
/** How often a running command is looked at: soon while it prints, less often while it is quiet. */
const POLL_MIN_MS = 150;
const POLL_MAX_MS = 1_000;

/**
 * A box's shell over Box's REST API. Short helpers are one command call; a streamed command runs
 * detached (Box writes its stdout and stderr to two log files) and is polled, its new log bytes
 * read by short commands, so stdout and stderr stay apart and nothing is held whole. Files go up
 * through Box's file API and come down through commands, piece by piece: Box's file read has a
 * size limit its documentation does not state, and a piece has none.
 */
export function boxShell(client: BoxClient, boxId: string): SandboxShell {
  const commands = `/boxes/${boxId}/commands`;

  async function exec(
    command: string,
    options: { timeoutMs: number; env: Record<string, string>; cwd: string },
  ): Promise<ShellResult> {
    const seconds = Math.min(MAX_COMMAND_SECONDS, Math.max(1, Math.ceil(options.timeoutMs / 1000)));
    const finished = await client.call<CommandFinished>("running a helper in the box", "POST", commands, {
      body: { command: commandLine(command, options.env, options.cwd), timeoutSeconds: seconds },
      timeoutMs: seconds * 1000 + COMMAND_MARGIN_MS,
    });
    if (finished.timedOut) {
      throw new ProviderError(
        "PROVIDER_FAILURE",
        `a helper in the box ran past ${seconds} s and was stopped`,
      );
    }
    if (finished.stdoutTruncated || finished.stderrTruncated) {
      throw new ProviderError("PROVIDER_FAILURE", "a helper in the box printed more than Box passes on");
    }
    return { exitCode: exitCodeOf(finished), stdout: finished.stdout, stderr: finished.stderr };
  }

  /**
   * Up to PIECE_BYTES (shared between them) of each file from its offset, in one command. A missing
   * log is not written yet and gives none; a missing download fails.
   */
  async function readPieces(
    files: Array<{ path: string; offset: number }>,
    missing: "empty" | "fails",
  ): Promise<Buffer[]> {
    const size = Math.floor(PIECE_BYTES / files.length);
    const script = files
      .map(({ path, offset }) => {
        const file = shellQuote(path);
        const absent =
          missing === "fails"
            ? `[ -f ${file} ] || { echo ${shellQuote(`no file ${path}`)} >&2; exit 3; }`
            : `[ ! -e ${file} ] ||`;
        const read = `tail -c +${offset + 1} -- ${file} | head -c ${size} | base64 -w0`;
        return missing === "fails" ? `${absent}\n${read}; echo` : `${absent} ${read}; echo`;
      })
      .join("\n");
    const result = await exec(script, { timeoutMs: 60_000, env: {}, cwd: "/" });
    const lines = result.stdout.split("\n");
    if (result.exitCode !== 0 || lines.length < files.length) {
      throw new ProviderError(
        "PROVIDER_FAILURE",
        `reading from the box failed: ${result.stderr.trim().slice(-300)}`,
      );
    }
    return files.map((_, index) => Buffer.from(lines[index] ?? "", "base64"));
  }

  async function put(path: string, bytes: Uint8Array): Promise<void> {
    await client.call("writing a file in the box", "PUT", `/boxes/${boxId}/files`, {
      body: { path, content: Buffer.from(bytes).toString("base64"), encoding: "base64" },
    });
  }

  /** The file in pieces; its first is read at once, so that a missing file fails here. */
  async function downloadStream(path: string): Promise<ReadableStream<Uint8Array>> {
    const readFrom = async (offset: number) =>
      (await readPieces([{ path, offset }], "fails"))[0] ?? Buffer.alloc(0);
    let offset = 0;
    let next: Buffer | null = await readFrom(0);
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const piece = next ?? (await readFrom(offset));
        next = null;
        if (piece.length > 0) {
          offset += piece.length;
          controller.enqueue(new Uint8Array(piece));
        }
        // a short piece is the file's end: no request just to learn there is nothing more
        if (piece.length < PIECE_BYTES) controller.close();
      },
    });
  }

  return {
    exec,

    async stream(command, { env, cwd, onStdout, onStderr }) {
      const started = await client.call<CommandStarted>("starting a command in the box", "POST", commands, {
        body: { command: commandLine(command, env, cwd), detached: true },
      });
      const logs = [
        { path: started.logPath, offset: 0, decoder: new TextDecoder(), deliver: onStdout },
        { path: started.errLogPath, offset: 0, decoder: new TextDecoder(), deliver: onStderr },
      ];
      let wait = POLL_MIN_MS;
      for (;;) {
        // the status first: once it says the command ended, the logs read after it are whole
        const status = await client.call<CommandStatus>(
          "following a command in the box",
          "GET",
          `${commands}/${started.processId}`,
          {
            // the output is read from the logs; the status call's copy of it is kept minimal
            query: { tailBytes: "1" },
          },
        );
        let printed = false;
        for (;;) {
          const pieces = await readPieces(logs, "empty");
          let full = false;
          pieces.forEach((piece, index) => {
            const log = logs[index];
            if (!log || piece.length === 0) return;
            log.offset += piece.length;
            const text = log.decoder.decode(piece, { stream: true });
            if (text) log.deliver(text);
            full ||= piece.length >= Math.floor(PIECE_BYTES / logs.length);
            printed = true;
          });
          if (!full) break;
        }
        if (status.status === "lost") {
          throw new ProviderError("PROVIDER_FAILURE", "Box lost the command (the box stopped while it ran)");
        }
        if (!status.running && status.status === "exited") {
          for (const log of logs) {
            const rest = log.decoder.decode();
            if (rest) log.deliver(rest);
          }
          return exitCodeOf(status);
        }
        wait = printed ? POLL_MIN_MS : Math.min(POLL_MAX_MS, wait * 2);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    },

    async writeTexts(files) {
      for (const { path, text } of files) await put(path, Buffer.from(text));
    },

    async upload(path, data) {
      // the first piece makes the file; the rest are appended through a part file, so no request
      // holds more than a piece
      const part = `${path}.part`;
      let written = false;
      for await (const piece of pieces(data)) {
        if (!written) {
          await put(path, piece);
          written = true;
          continue;
        }
        await put(part, piece);
        const appended = await exec(
          `cat -- ${shellQuote(part)} >>${shellQuote(path)} && rm -f -- ${shellQuote(part)}`,
          {
            timeoutMs: 60_000,
            env: {},
            cwd: "/",
          },
        );
        if (appended.exitCode !== 0) {
          throw new ProviderError(
            "PROVIDER_FAILURE",
            `writing a file in the box failed: ${appended.stderr.trim()}`,
          );
        }
      }
      if (!written) await put(path, new Uint8Array());
    },

    async download(path) {
      return new Uint8Array(await new Response(await downloadStream(path)).arrayBuffer());
    },

    downloadStream,
  };
}

/** Box reports a signal's death by name with no exit code; the shell's convention is 128 + its number. */
function exitCodeOf(result: { exitCode: number | null; signal?: string | null }): number {
  if (result.exitCode !== null) return result.exitCode;
  const number = result.signal
    ? constants.signals[result.signal as keyof typeof constants.signals]
    : undefined;
  return 128 + (number ?? constants.signals.SIGKILL);
}

/** The data in pieces of at most PIECE_BYTES, a stream read as it comes. */
async function* pieces(data: Uint8Array | ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  if (data instanceof Uint8Array) {
    for (let at = 0; at < data.length; at += PIECE_BYTES) yield data.subarray(at, at + PIECE_BYTES);
    return;
  }
  let held: Buffer[] = [];
  let size = 0;
  const reader = data.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    const chunk = read.value;
    held.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    size += chunk.byteLength;
    while (size >= PIECE_BYTES) {
      const joined = Buffer.concat(held);
      yield joined.subarray(0, PIECE_BYTES);
      held = [joined.subarray(PIECE_BYTES)];
      size -= PIECE_BYTES;
    }
  }
  if (size > 0) yield Buffer.concat(held);
}
