import { CommandExitError, type Sandbox } from "@e2b/desktop";
import type { SandboxShell } from "../remote/shell.ts";
import { asProviderError, vendorCall } from "./sandboxes.ts";

/**
 * The remote machine's shell on one E2B sandbox: envd's commands (which keep a command's whole
 * output in memory, and throw CommandExitError for a non-zero exit: a result here) and envd's file
 * API, which carries bytes as they are.
 */
export function e2bShell(sandbox: Sandbox): SandboxShell {
  return {
    async exec(command, { timeoutMs, env, cwd }) {
      try {
        const result = await sandbox.commands.run(command, { envs: env, cwd, timeoutMs });
        return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
      } catch (error) {
        if (error instanceof CommandExitError) {
          return { exitCode: error.exitCode, stdout: error.stdout, stderr: error.stderr };
        }
        throw asProviderError("running a helper in the sandbox", error);
      }
    },

    async stream(command, { env, cwd, onStdout, onStderr }) {
      try {
        const handle = await sandbox.commands.run(command, {
          background: true,
          // the caller ends the run itself; the SDK's timeout would only drop the stream
          timeoutMs: 0,
          cwd,
          envs: env,
          onStdout,
          onStderr,
        });
        return (await handle.wait()).exitCode;
      } catch (error) {
        if (error instanceof CommandExitError) return error.exitCode;
        throw asProviderError("running a command", error);
      }
    },

    async writeTexts(files) {
      await vendorCall("installing Cubicle's helpers in the sandbox", () =>
        sandbox.files.write(files.map(({ path, text }) => ({ path, data: text }))),
      );
    },

    async upload(path, data) {
      const body = data instanceof Uint8Array ? new Uint8Array(data).buffer : data;
      await vendorCall("uploading a file", () => sandbox.files.write(path, body));
    },

    download: (path) => vendorCall("reading a file", () => sandbox.files.read(path, { format: "bytes" })),

    async downloadStream(path) {
      const source = await vendorCall("reading a file", () => sandbox.files.read(path, { format: "stream" }));
      const reader = source.getReader();
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch (error) {
            controller.error(asProviderError("reading a file", error));
          }
        },
        cancel: (reason) => reader.cancel(reason),
      });
    },
  };
}
