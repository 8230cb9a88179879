import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { Readable } from "node:stream";
import { ArchiveRefused, copyEntry, HOME_SWAP_SCRIPT, sanitiseHomeArchive } from "@cubicle/providers/kernel";
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

/**
 * The home as a tar stream with `./`-relative names, rewritten from Docker's (which are rooted at
 * the folder's own name) one entry at a time.
 */
export async function exportHome(
  container: Docker.Container,
  running: boolean,
): Promise<ReadableStream<Uint8Array>> {
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
        if (rest !== "" && STAGING.test(rest.split("/")[0] ?? "")) {
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
