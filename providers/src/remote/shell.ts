/**
 * What a vendor's SDK gives Cubicle inside one sandbox: shell commands as the sandbox's user, and
 * file bytes. Everything a remote computer does (files confined to the home, streamed commands,
 * screens, home archives) is built from these few calls in this folder, so each vendor adapter
 * only says how its SDK makes them. Implementations report failures as ProviderErrors.
 */
export interface ShellResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  timeoutMs: number;
  env: Record<string, string>;
  /** An absolute folder in the sandbox. */
  cwd: string;
}

export interface StreamOptions {
  env: Record<string, string>;
  cwd: string;
  onStdout(data: string): void;
  onStderr(data: string): void;
}

export interface SandboxShell {
  /**
   * A short command, run by bash to its end with its output held (so only for small output); a
   * non-zero exit is a result, not an error. Past `timeoutMs` it fails.
   */
  exec(command: string, options: ExecOptions): Promise<ShellResult>;
  /**
   * A command whose stdout and stderr are delivered apart as they are written; resolves with its
   * exit code. Enforces no timeout: the caller kills the run when it wants it ended.
   */
  stream(command: string, options: StreamOptions): Promise<number>;
  /** Small text files, written whole (parents made). */
  writeTexts(files: Array<{ path: string; text: string }>): Promise<void>;
  /** Bytes to a file, streamed when given a stream (parents made). */
  upload(path: string, data: Uint8Array | ReadableStream<Uint8Array>): Promise<void>;
  download(path: string): Promise<Uint8Array>;
  /** A file's bytes as they arrive, never held whole. */
  downloadStream(path: string): Promise<ReadableStream<Uint8Array>>;
}
