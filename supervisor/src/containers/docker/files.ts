import { parseHomeListing } from "@cubicle/providers/kernel";
import type Docker from "dockerode";
import { containerPath, homeRelativePath } from "../../paths.ts";
import { outsideHome, SupervisorProblem, tooLarge } from "../../problems.ts";
import type { OpenedPath } from "../manager.ts";
import { webStreamFrom } from "../streams.ts";
import { HelperRun } from "./home-helper.ts";

/**
 * The home's files, each operation one run of home-files.pl inside the computer as its user: it
 * resolves the path and uses it in one step, component by component without following a symlink
 * it has not checked itself, so nothing swapped in meanwhile leads it out of the home. (Docker's
 * archive API would resolve the path again, follow symlinks and read or write as root.)
 */

/** How long a listing, a delete or a path check may take inside the computer. */
const SMALL_OP_SECONDS = 60;
/** The most a folder listing may send. */
const MAX_LISTING_BYTES = 32 * 1024 * 1024;

type Verdict = "ok" | "outside" | "missing" | "notdir" | "notfile" | "toolarge" | "nospace";

function problemFor(verdict: string, relative: string, maxBytes = 0): SupervisorProblem {
  const shown = relative || ".";
  switch (verdict as Verdict) {
    case "toolarge":
      return tooLarge(maxBytes);
    case "outside":
      return outsideHome();
    case "missing":
      return new SupervisorProblem("FILE_NOT_FOUND", `no such file or folder: ${shown}`);
    case "notdir":
      return new SupervisorProblem("NOT_A_DIRECTORY", `not a folder: ${shown}`);
    case "notfile":
      return new SupervisorProblem("NOT_A_FILE", `not a file: ${shown}`);
    case "nospace":
      return new SupervisorProblem("DISK_FULL", `no space left on the computer's disk to write ${shown}`);
    default:
      return new SupervisorProblem("COMPUTER_FAILURE", `unexpected answer "${verdict}" for ${shown}`);
  }
}

/** Runs a small operation (no stdin, output collected); its verdict line and the rest. */
async function smallOp(
  container: Docker.Container,
  args: string[],
): Promise<{ verdict: string; rest: Buffer }> {
  const run = await HelperRun.files(container, args, { timeoutSeconds: SMALL_OP_SECONDS });
  try {
    const verdict = await run.line();
    const rest = await run.collect(MAX_LISTING_BYTES);
    await run.finish();
    return { verdict, rest };
  } finally {
    run.close();
  }
}

/** A folder's entries or a file's bytes, streamed; refused unless the path stays in the home. */
export async function openPath(
  container: Docker.Container,
  path: string,
  options: { maxBytes: number; expect?: "file" | "directory" },
): Promise<OpenedPath> {
  const relative = homeRelativePath(path);
  if (options.expect === "directory") {
    const { verdict, rest } = await smallOp(container, ["list", relative]);
    if (verdict !== "ok") throw problemFor(verdict, relative);
    return { kind: "directory", entries: parseHomeListing(rest.toString("utf8"), relative) };
  }
  const run = await HelperRun.files(container, ["open", relative, String(options.maxBytes)]);
  let handedOver = false;
  try {
    const verdict = await run.line();
    if (verdict === "ok") {
      if (options.expect === "file") throw problemFor("notfile", relative);
      const listing = await run.collect(MAX_LISTING_BYTES);
      await run.finish();
      return { kind: "directory", entries: parseHomeListing(listing.toString("utf8"), relative) };
    }
    const size = /^file (\d+)$/.exec(verdict)?.[1];
    if (size === undefined) throw problemFor(verdict, relative, options.maxBytes);
    handedOver = true;
    return { kind: "file", size: Number(size), body: webStreamFrom(fileBytes(run, Number(size), relative)) };
  } finally {
    if (!handedOver) run.close();
  }
}

/** Exactly `size` bytes, then a clean exit; anything else errors the stream (never a short file). */
async function* fileBytes(run: HelperRun, size: number, relative: string): AsyncGenerator<Buffer> {
  try {
    let seen = 0;
    for await (const chunk of run.rest()) {
      seen += chunk.length;
      if (seen > size) break;
      yield chunk;
    }
    await run.finish();
    if (seen !== size) {
      throw new SupervisorProblem("COMPUTER_FAILURE", `reading ${relative} gave ${seen} of ${size} bytes`);
    }
  } finally {
    run.close();
  }
}

/** The real path of a working directory in the home. */
export async function resolveCwd(container: Docker.Container, path: string | undefined): Promise<string> {
  const relative = homeRelativePath(path ?? "");
  if (relative === "") return containerPath("");
  const { verdict, rest } = await smallOp(container, ["cwd", relative]);
  const real = rest.toString("utf8").split("\0")[0];
  if (verdict !== "ok" || !real) throw problemFor(verdict, relative);
  return real;
}

/**
 * Writes `size` bytes under a temporary name next to the target, then renames it over the target,
 * so the file is never seen half-written and a broken upload leaves the old one in place. The
 * parent folders are made as needed.
 */
export async function writeFile(
  container: Docker.Container,
  path: string,
  body: ReadableStream<Uint8Array>,
  options: { size: number; executable: boolean },
): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new SupervisorProblem("INVALID_PATH", "a file path is required");
  const mode = options.executable ? "755" : "644";
  const run = await HelperRun.files(container, ["write", relative, String(options.size), mode], {
    stdin: true,
  });
  try {
    const verdict = await run.line();
    if (verdict !== "ok") throw problemFor(verdict, relative);
    let sent = 0;
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        sent += value.byteLength;
        if (sent > options.size) break;
        await run.write(value);
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
    if (sent !== options.size) {
      // the helper gets end-of-file before its last byte and removes what it wrote
      run.endInput();
      await run.finish().catch(() => undefined);
      throw new SupervisorProblem("INVALID_REQUEST", "the upload's body did not match its announced length");
    }
    // the body ended where announced: only now may the helper commit
    await run.write(Buffer.from("\n"));
    run.endInput();
    const done = await run.line();
    if (done !== "done") throw problemFor(done, relative);
    await run.finish();
  } finally {
    run.close();
  }
}

/**
 * Removes the temporary files of uploads whose writer died with the computer (see home-files.pl's
 * sweep); run at every start, as one ended by `docker kill` or a crash had no chance to.
 */
export async function sweepUploads(container: Docker.Container): Promise<void> {
  const { verdict } = await smallOp(container, ["sweep", ""]);
  if (verdict !== "ok") throw problemFor(verdict, "");
}

/** Removes a file, a symlink (not its target) or a folder with its contents. */
export async function deletePath(container: Docker.Container, path: string): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new SupervisorProblem("INVALID_PATH", "the home itself cannot be deleted");
  const { verdict } = await smallOp(container, ["delete", relative]);
  if (verdict !== "ok") throw problemFor(verdict, relative);
}
