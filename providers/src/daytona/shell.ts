import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Sandbox } from "@daytonaio/sdk";
import { shellQuote } from "../kernel/shell-quote.ts";
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
 * The line a session runs: the command in its own bash, in its folder, with its variables (session
 * commands take neither) and no input, so nothing it does changes the session's shell.
 */
function sessionLine(command: string, env: Record<string, string>, cwd: string): string {
  const assignments = Object.entries(env).map(([name, value]) => shellQuote(`${name}=${value}`));
  return `cd -- ${shellQuote(cwd)} && env ${assignments.join(" ")} /bin/bash -c ${shellQuote(command)} </dev/null`;
}

/**
 * The remote machine's shell on one Daytona sandbox. Commands run as session commands, the one
 * documented way that keeps stdout and stderr apart (`executeCommand` merges them and holds the
 * whole output); a streamed one follows its logs over the toolbox's WebSocket as they are written.
 * Files travel through the toolbox's multipart file API, streamed both ways.
 */
export function daytonaShell(sandbox: Sandbox): SandboxShell {
  return {
    exec: (command, { timeoutMs, env, cwd }) =>
      inSession(sandbox, async (sessionId) => {
        const result = await vendorCall("running a helper in the sandbox", () =>
          sandbox.process.executeSessionCommand(
            sessionId,
            { command: sessionLine(command, env, cwd), runAsync: false },
            Math.ceil(timeoutMs / 1000),
          ),
        );
        return { exitCode: result.exitCode ?? -1, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
      }),

    stream: (command, { env, cwd, onStdout, onStderr }) =>
      inSession(sandbox, async (sessionId) => {
        const { cmdId } = await vendorCall("running a command", () =>
          sandbox.process.executeSessionCommand(sessionId, {
            command: sessionLine(command, env, cwd),
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
