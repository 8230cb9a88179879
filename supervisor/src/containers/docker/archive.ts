import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { Readable } from "node:stream";
import type { HomeListing } from "@cubicle/providers/contract";
import {
  ArchiveRefused,
  copyEntry,
  HOME_SWAP_SCRIPT,
  PATHS_TAR_ARGS,
  parseStampedListing,
  pathsInput,
  sanitiseHomeArchive,
  stampedListingFindArgs,
  tarLeftOutUnreadable,
} from "@cubicle/providers/kernel";
import type Docker from "dockerode";
import { extract as tarExtract, pack as tarPack } from "tar-stream";
import { COMPUTER_GID, COMPUTER_UID } from "../../homes.ts";
import { CONTAINER_HOME } from "../../paths.ts";
import { SupervisorProblem } from "../../problems.ts";
import { nodeStreamFrom, webStreamFrom } from "../streams.ts";
import { dockerFailure } from "./errors.ts";
import { checkedExec } from "./exec.ts";
import { HelperRun } from "./home-helper.ts";

/**
 * The whole home as tar streams, out and in: bytes flow through here a chunk at a time and are
 * never held whole. A running computer's home is read and written by GNU tar inside it, as the
 * computer's user (tar walks the tree with openat and O_NOFOLLOW, so a folder swapped for a symlink
 * meanwhile leads it nowhere); Docker's archive API, which works as root and follows symlinks, is
 * used only on a stopped computer, where nothing can swap anything.
 */

async function getArchive(container: Docker.Container, path: string): Promise<Readable> {
  try {
    return (await container.getArchive({ path })) as Readable;
  } catch (error) {
    throw dockerFailure(`reading ${path} from the computer failed`, error);
  }
}

/** Top-level folders the supervisor uses while importing; never part of an export. */
const STAGING = /^\.cubicle-(import|old)-/;

/** Whether a home-relative path ("." the home) is in a staging folder, or is one. */
const staged = (path: string) => STAGING.test(path.split("/")[0] ?? "");

/** The most a home's listing may send: about 1.5 million entries. */
const MAX_LISTING_BYTES = 256 * 1024 * 1024;

/**
 * Every entry of a running computer's home with its stamp (stampedListingFindArgs), by `find` in
 * the computer as its user; the staging folders are left out as an export leaves them out. The
 * computer shares this host's kernel, whose clock sets the status change times, so `listedAt` is
 * taken here, before `find` starts.
 */
export async function listHome(container: Docker.Container): Promise<HomeListing> {
  const listedAt = Date.now() / 1000;
  const run = await HelperRun.start(container, "listing the home", [
    "find",
    ...stampedListingFindArgs(CONTAINER_HOME),
  ]);
  try {
    const output = await run.collect(MAX_LISTING_BYTES);
    await run.finish();
    const listing = parseStampedListing(output, listedAt);
    return { listedAt, entries: listing.entries.filter((entry) => !staged(entry.path)) };
  } finally {
    run.close();
  }
}

/**
 * The home as a tar stream with `./`-relative names. With `paths` (home-relative, "" or "." the
 * home), only those entries, each alone, named as the whole export names them; one gone meanwhile
 * is left out. Whole, it is rewritten from Docker's names (rooted at the folder's own name) one
 * entry at a time.
 */
export async function exportHome(
  container: Docker.Container,
  running: boolean,
  paths?: readonly string[],
): Promise<ReadableStream<Uint8Array>> {
  const named = paths?.map((path) => path || ".").filter((path) => !staged(path));
  if (running && named) return webStreamFrom(await tarPathsInComputer(container, named));
  const wanted = named && new Set(named);
  const archive = running ? await tarInComputer(container) : await getArchive(container, CONTAINER_HOME);
  const prefix = posix.basename(CONTAINER_HOME);
  const extract = tarExtract();
  const pack = tarPack();
  archive.on("error", (error) => extract.destroy(error));
  archive.pipe(extract);
  void (async () => {
    try {
      for await (const entry of extract) {
        const header = entry.header;
        const rest =
          header.name === prefix || header.name === `${prefix}/` ? "" : header.name.slice(prefix.length + 1);
        const relative = rest.replace(/\/$/, "") || ".";
        // a stopped computer's named entries are picked from Docker's whole archive
        if (staged(relative) || (wanted && !wanted.has(relative))) {
          entry.resume();
          continue;
        }
        // pax records are dropped: they would repeat the old name, which wins over the new one
        await copyEntry(pack, { ...header, name: rest === "" ? "./" : `./${rest}`, pax: null }, entry);
      }
      pack.finalize();
    } catch (error) {
      pack.destroy(error instanceof Error ? error : new Error(String(error)));
      archive.destroy();
    }
  })();
  return webStreamFrom(pack);
}

/**
 * `tar -c` of the home inside the computer, its names rooted at the home's own name as Docker's
 * are. An unreadable file or a tar that fails errors the stream rather than ending it (1 is GNU
 * tar's "a file changed while it was read": the archive is still whole).
 */
async function tarInComputer(container: Docker.Container): Promise<Readable> {
  const run = await HelperRun.start(container, "reading the home", [
    "tar",
    "-C",
    posix.dirname(CONTAINER_HOME),
    "--numeric-owner",
    "-cf",
    "-",
    posix.basename(CONTAINER_HOME),
  ]);
  async function* bytes() {
    try {
      yield* run.rest();
      await run.finish({ alsoFine: [1] });
    } finally {
      run.close();
    }
  }
  return Readable.from(bytes());
}

/**
 * `tar -c` of the named home entries inside the computer (PATHS_TAR_ARGS), as its user: whatever
 * it reads is what the computer's user can read anyway. One gone since the listing is skipped;
 * one tar could not read fails the stream, as it fails a whole export.
 */
async function tarPathsInComputer(container: Docker.Container, paths: readonly string[]): Promise<Readable> {
  let unreadable = "";
  const run = await HelperRun.start(
    container,
    "reading home entries",
    ["tar", "-C", CONTAINER_HOME, "--numeric-owner", ...PATHS_TAR_ARGS, "-cf", "-"],
    {
      stdin: true,
      // each complaint is one write of tar's; only the last few are kept otherwise
      onStderr: (text) => {
        if (!unreadable && tarLeftOutUnreadable(text)) unreadable = text.trim();
      },
    },
  );
  // fed while the archive is read: tar stops reading names while its output is not taken
  const fed = run.write(pathsInput(paths)).then(() => run.endInput());
  fed.catch(() => undefined);
  async function* bytes() {
    try {
      yield* run.rest();
      await run.finish({ alsoFine: [1] });
      await fed;
      if (unreadable)
        throw new SupervisorProblem("COMPUTER_FAILURE", `reading home entries failed: ${unreadable}`);
    } finally {
      run.close();
    }
  }
  return Readable.from(bytes());
}

/** `tar -x` of `tar` into the new home-relative folder `stage`, inside the computer as its user. */
async function untarInComputer(container: Docker.Container, stage: string, tar: Readable): Promise<void> {
  const run = await HelperRun.files(container, ["untar", stage], { stdin: true });
  try {
    try {
      for await (const chunk of tar) await run.write(chunk as Buffer);
    } catch (error) {
      // tar stops at the end of its input; the staging folder is removed only once it has
      run.endInput();
      await run.finish().catch(() => undefined);
      throw error;
    }
    run.endInput();
    await run.finish();
  } finally {
    run.close();
  }
}

/** `browsers close`: up to 5 s for windows to close, 10 s after SIGTERM, then SIGKILL; with margin. */
const BROWSERS_CLOSE_TIMEOUT_MS = 90_000;

/**
 * Replaces the home's contents with the tar's. Extracted first into a staging folder inside the
 * home (same filesystem, so the swap is renames only); a broken or refused archive leaves the home
 * (and the browsers) as they were. Once it is extracted, the computer's browsers are closed, then
 * the staged contents are swapped in (the kernel's home-swap.sh).
 */
export async function importHome(
  container: Docker.Container,
  tarStream: ReadableStream<Uint8Array>,
): Promise<void> {
  const id = randomUUID();
  const stage = `.cubicle-import-${id}`;
  const old = `.cubicle-old-${id}`;
  const stagePath = `${CONTAINER_HOME}/${stage}`;
  let refused: unknown = null;
  const sanitised = sanitiseHomeArchive(nodeStreamFrom(tarStream), { uid: COMPUTER_UID, gid: COMPUTER_GID });
  sanitised.on("error", (error) => {
    refused = error;
  });
  try {
    await untarInComputer(container, stage, sanitised);
    if (refused) throw refused;
  } catch (error) {
    await checkedExec(container, "cleaning up a failed import", ["rm", "-rf", "--", stagePath]).catch(
      () => undefined,
    );
    const cause = refused ?? error;
    if (cause instanceof SupervisorProblem) throw cause;
    if (cause instanceof ArchiveRefused)
      throw new SupervisorProblem("INVALID_ARCHIVE", cause.message, { cause });
    if (refused)
      throw new SupervisorProblem("INVALID_ARCHIVE", `the home archive was refused: ${String(refused)}`);
    throw dockerFailure("extracting the home archive failed", error);
  }
  // Nothing may write the home while it is swapped, nor after into the new one; a running browser
  // does both (its profile is in the home). Closed as `browsers close` does, so a failed swap keeps
  // a whole profile; they stay closed, as after a checkpoint restore.
  await checkedExec(
    container,
    "closing the browsers before swapping in the imported home",
    ["/opt/cubicle/browsers", "close"],
    { timeoutMs: BROWSERS_CLOSE_TIMEOUT_MS },
  ).catch(async (error: unknown) => {
    await checkedExec(container, "cleaning up a failed import", ["rm", "-rf", "--", stagePath]).catch(
      () => undefined,
    );
    throw error;
  });
  await checkedExec(
    container,
    "swapping in the imported home",
    ["sh", "-c", HOME_SWAP_SCRIPT, "home-swap", CONTAINER_HOME, stage, old],
    {
      timeoutMs: 300_000,
    },
  ).catch(async (error: unknown) => {
    await checkedExec(container, "cleaning up a failed import", ["rm", "-rf", "--", stagePath]).catch(
      () => undefined,
    );
    throw error;
  });
}
