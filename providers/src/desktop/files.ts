import { randomBytes } from "node:crypto";
import { constants, promises as fs, type Stats } from "node:fs";
import { type FileEntry, outsideHome, ProviderError, tooLarge } from "../contract/index.ts";
import { byName } from "../kernel/by-name.ts";
import { inside, insideBytes, removeInside, type Walked, walk } from "../kernel/confined-walk.ts";
import { homeRelativePath } from "../kernel/home-path.ts";

/**
 * The machine's files, from the host. The machine's own programs can change them at any moment,
 * so no path is checked and then used again: each operation walks to its target with the
 * kernel's confined walk (kernel/confined-walk.ts) and uses what the walk opened.
 */

/** Where a machine's file operations may land, all as real (symlink-free) absolute paths. */
export interface Confinement {
  home: string;
  /** The home first, then the owner's extra allowed roots. */
  roots: readonly string[];
}

const READ_CHUNK = 64 * 1024;

function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

const notFound = (relative: string) =>
  new ProviderError("FILE_NOT_FOUND", `no such file or folder: ${relative || "."}`);
const notAFile = (relative: string) => new ProviderError("NOT_A_FILE", `not a file: ${relative || "."}`);
const notADirectory = (relative: string) =>
  new ProviderError("NOT_A_DIRECTORY", `not a folder: ${relative || "."}`);

/** Turns a filesystem error into the contract's error; anything unexpected is a provider failure. */
function mapError(error: unknown, relative: string): Error {
  if (error instanceof ProviderError) return error;
  switch (errnoOf(error)) {
    case "ENOENT":
    case "ENOTDIR":
      return notFound(relative);
    // a symlink loop, or a final symlink met by O_NOFOLLOW: its target is never confirmed inside
    case "ELOOP":
      return outsideHome();
    case "EISDIR":
      return notAFile(relative);
    default:
      return new ProviderError("PROVIDER_FAILURE", `file operation failed on ${relative || "."}`, {
        cause: error,
      });
  }
}

/**
 * The walked path's last component opened without following it (the walk resolved it already; a
 * symlink swapped in since is refused). O_NONBLOCK: a FIFO cannot hang us.
 */
async function openLast(walked: Walked, relative: string): Promise<fs.FileHandle> {
  if (walked.name === null)
    return fs.open(`/proc/self/fd/${walked.dir.fd}`, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    return await fs.open(
      inside(walked.dir, walked.name),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch (error) {
    throw mapError(error, relative);
  }
}

/** `use` on the path's last component, opened in one step with the walk that checked it. */
async function withOpened<T>(
  files: Confinement,
  relative: string,
  use: (handle: fs.FileHandle, walked: Walked) => Promise<T>,
): Promise<T> {
  const walked = await walk(files.roots, relative, { followLast: true }).catch((error: unknown) => {
    throw mapError(error, relative);
  });
  try {
    const handle = await openLast(walked, relative);
    try {
      return await use(handle, walked);
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw mapError(error, relative);
  } finally {
    await walked.close();
  }
}

/** A working directory for a command: must exist, be a folder and stay inside. */
export async function resolveDirectory(files: Confinement, path: string): Promise<string> {
  const relative = homeRelativePath(path);
  return withOpened(files, relative, async (handle, walked) => {
    if (!(await handle.stat()).isDirectory()) throw notADirectory(relative);
    return walked.real;
  });
}

function entryOf(name: string, relative: string, stats: Stats): FileEntry {
  const type = stats.isSymbolicLink() ? "symlink" : stats.isDirectory() ? "directory" : "file";
  return {
    name,
    path: relative ? `${relative}/${name}` : name,
    type,
    size: stats.size,
    executable: type === "file" && (stats.mode & 0o111) !== 0,
    modifiedAt: stats.mtime.toISOString(),
  };
}

export async function listFiles(files: Confinement, path: string): Promise<FileEntry[]> {
  const relative = homeRelativePath(path);
  return withOpened(files, relative, async (dir) => {
    if (!(await dir.stat()).isDirectory()) throw notADirectory(relative);
    // read as bytes: a name that is not UTF-8 (a program in the machine can make one) decoded first
    // would be looked up as U+FFFD and go missing from the listing; it is listed under its decoded
    // name, as the other backends list it
    const names = (await fs.readdir(`/proc/self/fd/${dir.fd}`, { encoding: "buffer" }))
      .map((raw) => ({ raw, name: raw.toString("utf8") }))
      .sort(byName);
    const entries: FileEntry[] = [];
    for (const { raw, name } of names) {
      // lstat: a symlink is listed as itself, its target is never looked at
      const entry = await fs.lstat(insideBytes(dir, raw)).catch(() => null);
      if (entry) entries.push(entryOf(name, relative, entry));
    }
    return entries;
  });
}

export async function readFile(files: Confinement, path: string, maxBytes: number): Promise<Uint8Array> {
  const relative = homeRelativePath(path);
  return withOpened(files, relative, async (handle) => {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notAFile(relative);
    if (stats.size > maxBytes) throw tooLarge(maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buffer = Buffer.alloc(READ_CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      // the file may have grown since fstat; still never hand out a partial or oversized read
      if (total > maxBytes) throw tooLarge(maxBytes);
      chunks.push(buffer.subarray(0, bytesRead));
    }
    const data = Buffer.concat(chunks, total);
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  });
}

export async function writeFile(
  files: Confinement,
  path: string,
  data: Uint8Array,
  options: { executable?: boolean } = {},
): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw notAFile(relative);
  const walked = await walk(files.roots, relative, { followLast: true, create: true }).catch(
    (error: unknown) => {
      throw mapError(error, relative);
    },
  );
  try {
    const { dir, name } = walked;
    if (name === null) throw notAFile(relative);
    const existing = await fs.lstat(inside(dir, name)).catch(() => null);
    if (existing && !existing.isFile()) throw notAFile(relative);
    const mode = options.executable ? 0o755 : 0o644;
    // a short fixed-size name: appending to the real name could pass the 255-byte name limit
    const temp = `.cubicle-${randomBytes(8).toString("hex")}.tmp`;
    try {
      const handle = await fs.open(
        inside(dir, temp),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        mode,
      );
      try {
        // the umask must not decide the mode
        await handle.chmod(mode);
        await handle.writeFile(data);
      } finally {
        await handle.close();
      }
      // rename never follows the name it replaces: a symlink put there meanwhile is replaced itself
      await fs.rename(inside(dir, temp), inside(dir, name));
    } catch (error) {
      await fs.rm(inside(dir, temp), { force: true }).catch(() => undefined);
      throw error;
    }
  } catch (error) {
    throw mapError(error, relative);
  } finally {
    await walked.close();
  }
}

export async function deleteFile(files: Confinement, path: string): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
  const walked = await walk(files.roots, relative, { followLast: false }).catch((error: unknown) => {
    throw mapError(error, relative);
  });
  try {
    if (walked.name === null) throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
    // a symlink is removed itself, its target is left alone
    await fs.lstat(inside(walked.dir, walked.name));
    await removeInside(walked.dir, walked.name);
  } catch (error) {
    throw mapError(error, relative);
  } finally {
    await walked.close();
  }
}
