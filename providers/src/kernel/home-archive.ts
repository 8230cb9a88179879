import { posix } from "node:path";
import { Readable, Transform } from "node:stream";
import { type Header, type Pack, extract as tarExtract, pack as tarPack } from "tar-stream";

/**
 * Home archives on their way into a computer, checked and rewritten the same way for every
 * backend that extracts them with the machine's own tar (Docker through the supervisor, E2B).
 */

/**
 * Copies one entry's header and body into `pack`, honouring the pack's back-pressure; a body that
 * a header without data comes with is drained.
 */
export async function copyEntry(
  pack: Pack,
  header: Header,
  body: AsyncIterable<unknown> & { resume(): unknown },
): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const sink = pack.entry(header, (error) => (error ? reject(error) : resolve()));
    // a failure reaches the caller through the entry's callback above; the same failure as an
    // 'error' event with nobody listening would take the whole process down
    sink.on("error", () => undefined);
    if (header.type !== "file" && header.type !== "contiguous-file") {
      body.resume();
      return;
    }
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

/** An archive that may not become a home; the message says why. */
export class ArchiveRefused extends Error {
  constructor(why: string) {
    super(`the home archive was refused: ${why}`);
    this.name = "ArchiveRefused";
  }
}

const invalidArchive = (why: string) => new ArchiveRefused(why);

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
 * The caller's tar rewritten for extraction: every member owned by the computer's user (`owner`),
 * no setuid/setgid bits, no device nodes; relative symlinks that climb out of the home are dropped
 * (they lead nowhere the computer may go). The stream fails with ArchiveRefused for a member that
 * climbs out or an archive cut short, so a broken upload never becomes a partial home.
 */
export function sanitiseHomeArchive(input: Readable, owner: { uid: number; gid: number }): Readable {
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
            uid: owner.uid,
            gid: owner.gid,
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
