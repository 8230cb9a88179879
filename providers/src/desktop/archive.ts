import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import type { Writable } from "node:stream";
import { type HomeListing, ProviderError } from "../contract/index.ts";
import { outputOf } from "../kernel/child-output.ts";
import type { FaultPlan } from "../kernel/faults.ts";
import {
  PATHS_TAR_ARGS,
  parseStampedListing,
  pathsInput,
  stampedListingFindArgs,
  tarLeftOutUnreadable,
} from "../kernel/home-listing.ts";
import { closeBrowsers } from "./browsers.ts";
import type { Machine } from "./machines.ts";
import { computerEnvironment, describeExit, type Exit, exitOf, isRunning, killGroup } from "./processes.ts";

/** tar (or find) as the machine's process: its group is ended with the machine. */
function startTar(
  machine: Machine,
  tar: string,
  args: string[],
  stdio: { input: boolean; output: boolean },
): ChildProcess {
  const child = spawn(tar, args, {
    cwd: machine.homesDir,
    env: computerEnvironment(machine.files.home),
    detached: true,
    stdio: [stdio.input ? "pipe" : "ignore", stdio.output ? "pipe" : "ignore", "pipe"],
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
export function exportHome(
  machine: Machine,
  tar: string,
  faults?: FaultPlan,
  paths?: readonly string[],
): ReadableStream<Uint8Array> {
  const breakAfterFirstChunk = faults?.take("export") ?? false;
  const home = machine.files.home;
  const child = paths
    ? startTar(machine, tar, ["-C", home, "--numeric-owner", ...PATHS_TAR_ARGS, "-cf", "-"], {
        input: true,
        output: true,
      })
    : startTar(machine, tar, ["-C", home, "--numeric-owner", "-cf", "-", "."], {
        input: false,
        output: true,
      });
  if (paths) {
    // a tar that fails early makes the write fail with EPIPE; its exit status tells the story
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(pathsInput(paths));
  }
  const stderr = collectStderr(child);
  const exited = exitOf(child);
  let broken = false;
  return outputOf(
    child,
    async () => {
      if (broken) return new ProviderError("PROVIDER_FAILURE", "home export failed: tar died mid-stream");
      const exit = await exited;
      if (paths && tarLeftOutUnreadable(stderr())) return failure("home export failed", exit, stderr());
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

/** Every entry of the home with its stamp, listed by `find` (stampedListingFindArgs). */
export async function listHome(machine: Machine): Promise<HomeListing> {
  const listedAt = Date.now() / 1000;
  const child = startTar(machine, "find", stampedListingFindArgs(machine.files.home), {
    input: false,
    output: true,
  });
  const stderr = collectStderr(child);
  const chunks: Buffer[] = [];
  child.stdout?.on("data", (chunk: Buffer) => chunks.push(chunk));
  const exit = await exitOf(child);
  if (exit.code !== 0) throw failure("listing the home failed", exit, stderr());
  return parseStampedListing(Buffer.concat(chunks), listedAt);
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
  const child = startTar(machine, tar, ["-C", temp, "-xpf", "-", "--no-same-owner"], {
    input: true,
    output: false,
  });
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
  // Nothing may write the home while it is swapped, nor after into the new one: a running browser
  // does both (its profile is in the home, opened by path). Closed as closeBrowsers does, so a
  // failed swap keeps a whole profile; they stay closed, as after a checkpoint restore.
  try {
    await closeBrowsers(home);
  } catch (error) {
    await fs.rm(temp, { recursive: true, force: true });
    throw new ProviderError("PROVIDER_FAILURE", "home import failed: the browsers could not be closed", {
      cause: error,
    });
  }
  await swapIn(machine, temp);
}

const isCode = (error: unknown, ...codes: string[]) =>
  error instanceof Error && "code" in error && codes.includes(String(error.code));

/**
 * Swaps the extracted folder in for the home by renames only: the home is renamed aside, the new
 * one renamed into its place, the old one removed. A rename cannot be made to fail by a program
 * writing inside the folder it moves, whereas removing a tree being written to can (ENOTEMPTY). A
 * program still running may make the home's path again between the two renames (one writing by
 * path, as Chromium does); that folder is renamed aside too and the rename retried. If the new
 * home cannot be put in place, the old one is renamed back the same way. Removing what was put
 * aside is retried, and a failure there (something still writing into it) does not fail an import
 * that is done: the trash is outside the home.
 */
async function swapIn(machine: Machine, temp: string): Promise<void> {
  const home = machine.files.home;
  const trashes: string[] = [];
  const aside = async (): Promise<boolean> => {
    const trash = join(machine.homesDir, `.${machine.homeKey}.trash-${randomBytes(4).toString("hex")}`);
    try {
      await fs.rename(home, trash);
      trashes.push(trash);
      return true;
    } catch (error) {
      if (isCode(error, "ENOENT")) return false;
      throw error;
    }
  };
  /** Renames `from` to the home's path, putting aside a home made again meanwhile. */
  const into = async (from: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await fs.rename(from, home);
        return;
      } catch (error) {
        if (attempt >= 10 || !isCode(error, "ENOTEMPTY", "EEXIST", "ENOTDIR", "EISDIR")) throw error;
        await aside();
      }
    }
  };
  const removeTrashes = () =>
    Promise.all(
      trashes.map((trash) =>
        fs
          .rm(trash, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 })
          .catch(() => undefined),
      ),
    );

  let old: string | undefined;
  try {
    if (await aside()) old = trashes[0];
  } catch (error) {
    await fs.rm(temp, { recursive: true, force: true });
    throw new ProviderError("PROVIDER_FAILURE", "home import failed: the old home could not be moved", {
      cause: error,
    });
  }
  try {
    await into(temp);
  } catch (error) {
    if (old !== undefined) {
      trashes.splice(trashes.indexOf(old), 1);
      await into(old).catch(() => undefined);
    }
    await fs.rm(temp, { recursive: true, force: true });
    await removeTrashes();
    throw new ProviderError(
      "PROVIDER_FAILURE",
      "home import failed: the new home could not be put in place",
      {
        cause: error,
      },
    );
  }
  await removeTrashes();
}
