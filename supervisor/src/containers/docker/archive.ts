import { randomUUID } from "node:crypto";
import { posix } from "node:path";
import { Readable, Transform } from "node:stream";
import type Docker from "dockerode";
import { type Header, type Pack, extract as tarExtract, pack as tarPack } from "tar-stream";
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

/** Copies one entry's header and body into `pack`, honouring the pack's back-pressure. */
async function copyEntry(pack: Pack, header: Header, body: AsyncIterable<unknown>): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const sink = pack.entry(header, (error) => (error ? reject(error) : resolve()));
    if (header.type !== "file" && header.type !== "contiguous-file") return;
    void (async () => {
      try {
        for await (const chunk of body) {
          if (!sink.write(chunk)) await new Promise<void>((done) => sink.once("drain", () => done()));
        }
        sink.end(null);
      } catch (error) {
        sink.destroy(error instanceof Error ? error : new Error(String(error)));
      }
    })();
  });
}

const climbsOut = (path: string) => {
  const normalised = posix.normalize(path);
  return normalised === ".." || normalised.startsWith("../");
};

const invalidArchive = (why: string) =>
  new SupervisorProblem("INVALID_ARCHIVE", `the home archive was refused: ${why}`);

/** A tar member's name relative to the home, or null for the root itself; refused when it climbs out. */
export function archiveMemberName(name: string): string | null {
  if (name.includes("\0")) throw invalidArchive("a name contains NUL");
  const normalised = posix.normalize(name.replace(/^\/+/, ""));
  if (climbsOut(normalised)) throw invalidArchive(`"${name}" leaves the home`);
  const clean = normalised.replace(/^\.\/+/, "").replace(/\/+$/, "");
  return clean === "" || clean === "." ? null : clean;
}

const TAR_BLOCK = 512;

/**
 * Passes an archive through and fails it at its end unless it is whole: a tar is made of 512-byte
 * blocks and ends with two zero blocks. A cut-off archive would otherwise extract as a partial
 * home and replace the real one.
 */
function requireCompleteArchive(): Transform {
  let length = 0;
  let tail = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      length += chunk.length;
      tail = Buffer.concat([tail, chunk]).subarray(-2 * TAR_BLOCK);
      done(null, chunk);
    },
    flush(done) {
      const whole =
        length > 0 && length % TAR_BLOCK === 0 && tail.length === 2 * TAR_BLOCK && tail.every((b) => b === 0);
      done(whole ? null : invalidArchive("the archive is truncated (no end-of-archive marker)"));
    },
  });
}

/**
 * The caller's tar rewritten for extraction: every member owned by the computer's user, no
 * setuid/setgid bits, no device nodes; relative symlinks that climb out of the home are dropped
 * (they lead nowhere the computer may go).
 */
function sanitise(input: Readable): Readable {
  const extract = tarExtract();
  const pack = tarPack();
  const complete = requireCompleteArchive();
  input.on("error", (error) => extract.destroy(error));
  complete.on("error", (error) => extract.destroy(error));
  input.pipe(complete).pipe(extract);
  void (async () => {
    try {
      for await (const entry of extract) {
        const header = entry.header;
        const name = archiveMemberName(header.name);
        const keep =
          name !== null &&
          (header.type === "file" ||
            header.type === "contiguous-file" ||
            header.type === "directory" ||
            header.type === "symlink" ||
            header.type === "link");
        let linkname: string | null = header.linkname ?? null;
        if (keep && header.type === "link") linkname = archiveMemberName(linkname ?? "");
        const escapes =
          header.type === "symlink" &&
          !posix.isAbsolute(linkname ?? "") &&
          climbsOut(posix.join(posix.dirname(name ?? ""), linkname ?? ""));
        if (!keep || name === null || escapes || (header.type === "link" && !linkname)) {
          entry.resume();
          continue;
        }
        await copyEntry(
          pack,
          {
            ...header,
            name,
            type: header.type === "contiguous-file" ? "file" : header.type,
            mode: (header.mode ?? (header.type === "directory" ? 0o755 : 0o644)) & 0o777,
            size: header.type === "file" || header.type === "contiguous-file" ? header.size : 0,
            mtime: header.mtime ?? new Date(),
            uid: COMPUTER_UID,
            gid: COMPUTER_GID,
            linkname,
            pax: null,
          } as Header,
          entry,
        );
      }
      pack.finalize();
    } catch (error) {
      pack.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  })();
  return Readable.from(pack);
}

/**
 * Swaps the staged contents in, by renames only: the current top-level entries move into
 * `$old/home`, each staged one is renamed into its place, and `$old` is removed. A rename cannot be
 * made to fail by a program writing inside the folder it moves, whereas removing a tree that is
 * being written to can (`rm: Directory not empty`), and a rollback built on removal then mixes old
 * and new. A program still running in the computer may also make a name again between the two
 * moves (the window manager, a bot's command); that one is renamed aside into `$old/again-N` and
 * the imported entry takes its place. If an entry cannot be moved in, whatever is in the home is
 * renamed aside and the previous contents are renamed back. The browsers are closed before this
 * runs (importHome), so none writes its profile during the swap or into the new home after it.
 * Removing `$old` is retried; if a program keeps writing into it, it is left to the next import
 * (exports skip it) rather than failing a swap that is done.
 */
const SWAP_SCRIPT = `set -u
cd ${CONTAINER_HOME} || exit 1
stage=$1 old=$2
# a symlink swapped in for the staging folder would move whatever it leads to into the home
[ -d "$stage" ] && [ ! -L "$stage" ] || { echo "the staging folder was replaced" >&2; exit 1; }
again=0
present() { [ -e "$1" ] || [ -L "$1" ]; }
staging() { [ "$1" = "$stage" ] || [ "$1" = "$old" ]; }
# put_aside <name>: renames the home's entry <name> into a new folder under $old
put_aside() {
  again=$((again + 1))
  mkdir -- "$old/again-$again" && mv -- "./$1" "$old/again-$again/"
}
# place <source> <name>: renames <source> to ./<name>, putting aside a <name> made again meanwhile
place() {
  tries=0
  until mv -T -- "$1" "./$2" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { mv -T -- "$1" "./$2"; return; }
    put_aside "$2" 2>/dev/null || :
  done
}
remove() {
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf -- "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  rm -rf -- "$1"
}
# put_back: once entries were moved in, whatever is in the home goes aside; the previous contents
# come back (a name made again meanwhile is put aside); $old is kept if any of them could not be
put_back() {
  if [ "$moving" = in ]; then
    for entry in ./* ./.[!.]* ./..?*; do
      name=\${entry#./}
      staging "$name" || ! present "$entry" || put_aside "$name"
    done
  fi
  for entry in "$old"/home/* "$old"/home/.[!.]* "$old"/home/..?*; do
    present "$entry" && place "$entry" "\${entry##*/}"
  done
  [ -n "$(ls -A -- "$old/home")" ] || remove "$old"
  exit 1
}
mkdir -- "$old" "$old/home" || exit 1
moving=aside
for entry in ./* ./.[!.]* ./..?*; do
  name=\${entry#./}
  staging "$name" || ! present "$entry" && continue
  # an entry removed meanwhile is fine; one that stays put is not
  mv -- "$entry" "$old/home/" || ! present "$entry" || put_back
done
moving=in
for entry in "$stage"/* "$stage"/.[!.]* "$stage"/..?*; do
  present "$entry" || continue
  place "$entry" "\${entry##*/}" || put_back
done
rmdir -- "$stage" 2>/dev/null || remove "$stage" || :
remove "$old" || echo "left $old behind: something still writes into it" >&2`;

/** `browsers close`: up to 5 s for windows to close, 10 s after SIGTERM, then SIGKILL; with margin. */
const BROWSERS_CLOSE_TIMEOUT_MS = 90_000;

/**
 * Replaces the home's contents with the tar's. Extracted first into a staging folder inside the
 * home (same filesystem, so the swap is renames only); a broken or refused archive leaves the home
 * (and the browsers) as they were. Once it is extracted, the computer's browsers are closed, then
 * the staged contents are swapped in (SWAP_SCRIPT).
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
  const sanitised = sanitise(nodeStreamFrom(tarStream));
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
    if (refused) throw invalidArchive(refused instanceof Error ? refused.message : String(refused));
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
    ["sh", "-c", SWAP_SCRIPT, "cubicle-import", stage, old],
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
