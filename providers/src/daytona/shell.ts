import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Sandbox } from "@daytonaio/sdk";
import { ProviderError } from "../contract/index.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { commandLine } from "../remote/command-line.ts";
import type { SandboxShell } from "../remote/shell.ts";
import { vendorCall } from "./sandboxes.ts";

/** Every command of a sandbox's shell in one session, deleted (with what it runs) when the command ends. */
async function inSession<T>(sandbox: Sandbox, run: (sessionId: string) => Promise<T>): Promise<T> {
  const sessionId = `cubicle-${randomUUID()}`;
  await vendorCall("opening a shell session", () => sandbox.process.createSession(sessionId));
  try {
    return await run(sessionId);
  } finally {
    await sandbox.process.deleteSession(sessionId).catch(() => undefined);
  }
}

/**
 * The remote machine's shell on one Daytona sandbox. A streamed command runs as a session command,
 * the documented way that keeps stdout and stderr apart as they are written (followed over the
 * toolbox's log WebSocket); a short helper is one `executeCommand`, its stderr set apart in the
 * sandbox (executeCommand merges the two and holds the whole output, fine for small helpers).
 * Files travel through the toolbox's multipart file API, streamed both ways.
 */
export function daytonaShell(sandbox: Sandbox): SandboxShell {
  return {
    async exec(command, { timeoutMs, env, cwd }) {
      // one call: executeCommand merges the streams, so stderr is kept in a file and printed after
      // a line no output can contain
      const mark = `cubicle-stderr-${randomUUID()}`;
      const script = `err=$(mktemp) || exit 125
/bin/bash -c ${shellQuote(command)} 2>"$err" </dev/null
status=$?
printf '\\n%s\\n' ${mark}
cat -- "$err"; rm -f -- "$err"
exit $status`;
      const result = await vendorCall("running a helper in the sandbox", () =>
        sandbox.process.executeCommand(
          `/bin/bash -c ${shellQuote(script)}`,
          cwd,
          env,
          Math.ceil(timeoutMs / 1000),
        ),
      );
      const split = result.result.lastIndexOf(`\n${mark}\n`);
      if (split < 0)
        throw new ProviderError(
          "PROVIDER_FAILURE",
          `a helper in the sandbox ended early: ${result.result.slice(-300)}`,
        );
      return {
        exitCode: result.exitCode,
        stdout: result.result.slice(0, split),
        stderr: result.result.slice(split + mark.length + 2),
      };
    },

    stream: (command, { env, cwd, onStdout, onStderr }) =>
      inSession(sandbox, async (sessionId) => {
        const { cmdId } = await vendorCall("running a command", () =>
          sandbox.process.executeSessionCommand(sessionId, {
            command: commandLine(command, env, cwd),
            runAsync: true,
          }),
        );
        // the log stream ends when the command has exited and its output was delivered
        await vendorCall("following a command's output", () =>
          sandbox.process.getSessionCommandLogs(sessionId, cmdId, onStdout, onStderr),
        );
        for (;;) {
          const { exitCode } = await vendorCall("reading a command's exit status", () =>
            sandbox.process.getSessionCommand(sessionId, cmdId),
          );
          if (exitCode !== undefined && exitCode !== null) return exitCode;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }),

    async writeTexts(files) {
      await vendorCall("installing Cubicle's helpers in the sandbox", () =>
        sandbox.fs.uploadFiles(
          files.map(({ path, text }) => ({ source: Buffer.from(text), destination: path })),
        ),
      );
    },

    async upload(path, data) {
      await vendorCall("uploading a file", () =>
        data instanceof Uint8Array
          ? sandbox.fs.uploadFile(Buffer.from(data.buffer, data.byteOffset, data.byteLength), path)
          : sandbox.fs.uploadFileStream(Readable.fromWeb(data as NodeReadableStream<Uint8Array>), path),
      );
    },

    async download(path) {
      const bytes = await vendorCall("reading a file", () => sandbox.fs.downloadFile(path));
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },

    async downloadStream(path) {
      const source = await vendorCall("reading a file", () => sandbox.fs.downloadFileStream(path));
      return Readable.toWeb(source as Readable) as ReadableStream<Uint8Array>;
    },
  };
}
