import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { ProviderError } from "../contract/index.ts";
import { outputOf } from "../kernel/child-output.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import type { Machine } from "./machines.ts";
import { computerEnvironment, describeExit, type Exit, exitOf, isRunning, killGroup } from "./processes.ts";

function startTar(machine: Machine, tar: string, args: string[], stdin: "ignore" | "pipe"): ChildProcess {
  const child = spawn(tar, args, {
    cwd: machine.homesDir,
    env: computerEnvironment(machine.files.home),
    detached: true,
    stdio: [stdin, stdin === "pipe" ? "ignore" : "pipe", "pipe"],
  });
  machine.groups.add(child);
  void exitOf(child).then(() => machine.groups.delete(child));
  return child;
}

/** The tail of tar's complaints, for the error message. */
function collectStderr(child: ChildProcess): () => string {
  let text = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    text = (text + chunk).slice(-2_000);
  });
  return () => text.trim();
}

function failure(what: string, exit: Exit, stderr: string): ProviderError {
  const detail = exit.error ? exit.error.message : stderr || describeExit(exit);
  return new ProviderError("PROVIDER_FAILURE", `${what}: ${detail}`, { cause: exit.error });
}

/**
 * The home as a tar stream. Built on pull rather than Readable.toWeb so that a tar that fails
 * after writing some output errors the stream instead of ending it as if it were complete.
 */
export function exportHome(machine: Machine, tar: string, faults?: FaultPlan): ReadableStream<Uint8Array> {
  const breakAfterFirstChunk = faults?.take("export") ?? false;
  const child = startTar(
    machine,
    tar,
    ["-C", machine.files.home, "--numeric-owner", "-cf", "-", "."],
    "ignore",
  );
  const stderr = collectStderr(child);
  const exited = exitOf(child);
  let broken = false;
  return outputOf(
    child,
    async () => {
      if (broken) return new ProviderError("PROVIDER_FAILURE", "home export failed: tar died mid-stream");
      const exit = await exited;
      // 1 is GNU tar's "a file changed while it was read": the archive is still whole
      return exit.code === 0 || exit.code === 1 ? null : failure("home export failed", exit, stderr());
    },
    {
      cancel: () => killGroup(child),
      // the injected break: the archiver dies mid-stream, as a crashed or OOM-killed one would
      afterChunk: () => {
        if (!breakAfterFirstChunk || broken) return;
        broken = true;
        if (isRunning(child)) killGroup(child);
      },
    },
  );
}

/** Writes the whole stream into tar's stdin; stops early once tar has exited. */
async function feed(
  source: ReadableStream<Uint8Array>,
  stdin: Writable,
  exited: Promise<Exit>,
  afterChunk: () => void,
): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const reader = source.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (gone) break;
      if (!stdin.write(value)) {
        const drained = await Promise.race([
          new Promise<boolean>((resolve) => stdin.once("drain", () => resolve(true))),
          exited.then(() => false),
        ]);
        if (!drained) break;
      }
      afterChunk();
    }
  } finally {
    if (gone) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
    stdin.end();
  }
}

/**
 * Replaces the home with the archive's contents: extracted beside it first, swapped in only when
 * tar succeeded, so a broken upload leaves the old home exactly as it was.
 */
export async function importHome(
  machine: Machine,
  tar: string,
  source: ReadableStream<Uint8Array>,
  faults?: FaultPlan,
): Promise<void> {
  const interrupt = faults?.take("import") ?? false;
  const home = machine.files.home;
  const temp = await fs.mkdtemp(join(machine.homesDir, `.${machine.homeKey}.import-`));
  // -p keeps the archived modes (exec bits); owners are never taken from the archive
  const child = startTar(machine, tar, ["-C", temp, "-xpf", "-", "--no-same-owner"], "pipe");
  const stderr = collectStderr(child);
  const exited = exitOf(child);
  const stdin = child.stdin;
  let interrupted = false;
  let sourceError: unknown = null;
  if (stdin) {
    // a tar that dies early makes writes fail with EPIPE; its exit status tells the story
    stdin.on("error", () => undefined);
    await feed(source, stdin, exited, () => {
      if (interrupt && !interrupted) {
        interrupted = true;
        killGroup(child);
      }
    }).catch((error: unknown) => {
      sourceError = error;
      killGroup(child);
    });
  }
  const exit = await exited;
  if (sourceError !== null || interrupted || exit.code !== 0) {
    await fs.rm(temp, { recursive: true, force: true });
    if (sourceError instanceof ProviderError) throw sourceError;
    if (sourceError !== null) {
      throw new ProviderError("PROVIDER_FAILURE", "home import failed: the archive stream broke", {
        cause: sourceError,
      });
    }
    throw failure("home import failed", exit, interrupted ? "extraction was interrupted" : stderr());
  }

  // the archive's "." entry carries the old home's mode; a home stays private regardless
  await fs.chmod(temp, 0o700);
  const trash = join(machine.homesDir, `.${machine.homeKey}.trash-${randomBytes(4).toString("hex")}`);
  let movedAside = false;
  try {
    await fs.rename(home, trash);
    movedAside = true;
  } catch (error) {
    if (!(error instanceof Error && "code" in error && error.code === "ENOENT")) {
      await fs.rm(temp, { recursive: true, force: true });
      throw new ProviderError("PROVIDER_FAILURE", "home import failed: the old home could not be moved", {
        cause: error,
      });
    }
  }
  try {
    await fs.rename(temp, home);
  } catch (error) {
    if (movedAside) await fs.rename(trash, home).catch(() => undefined);
    await fs.rm(temp, { recursive: true, force: true });
    throw new ProviderError(
      "PROVIDER_FAILURE",
      "home import failed: the new home could not be put in place",
      {
        cause: error,
      },
    );
  }
  await fs.rm(trash, { recursive: true, force: true });
}
