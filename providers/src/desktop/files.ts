import { randomBytes } from "node:crypto";
import { constants, promises as fs, type Stats } from "node:fs";
import { dirname, join, posix, sep } from "node:path";
import { type FileEntry, outsideHome, ProviderError, tooLarge } from "../contract/index.ts";
import { homeRelativePath } from "../kernel/home-path.ts";

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

function isInside(real: string, roots: readonly string[]): boolean {
  return roots.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep));
}

async function confinedRealpath(files: Confinement, absolute: string): Promise<string> {
  const real = await fs.realpath(absolute);
  if (!isInside(real, files.roots)) throw outsideHome();
  return real;
}

/** The real location of an existing path, refused unless it stays inside the allowed roots. */
async function resolveExisting(files: Confinement, relative: string): Promise<string> {
  try {
    return await confinedRealpath(files, join(files.home, relative));
  } catch (error) {
    throw mapError(error, relative);
  }
}

/** A working directory for a command: must exist, be a folder and stay inside. */
export async function resolveDirectory(files: Confinement, path: string): Promise<string> {
  const relative = homeRelativePath(path);
  const real = await resolveExisting(files, relative);
  const stats = await fs.stat(real).catch((error: unknown) => {
    throw mapError(error, relative);
  });
  if (!stats.isDirectory()) throw notADirectory(relative);
  return real;
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
  const real = await resolveExisting(files, relative);
  try {
    const stats = await fs.stat(real);
    if (!stats.isDirectory()) throw notADirectory(relative);
    const names = (await fs.readdir(real)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const entries: FileEntry[] = [];
    for (const name of names) {
      // lstat: a symlink is listed as itself, its target is never looked at
      const entry = await fs.lstat(join(real, name)).catch(() => null);
      if (entry) entries.push(entryOf(name, relative, entry));
    }
    return entries;
  } catch (error) {
    throw mapError(error, relative);
  }
}

export async function readFile(files: Confinement, path: string, maxBytes: number): Promise<Uint8Array> {
  const relative = homeRelativePath(path);
  const real = await resolveExisting(files, relative);
  let handle: fs.FileHandle;
  try {
    // O_NOFOLLOW: a symlink swapped in after the check is refused; O_NONBLOCK: a FIFO cannot hang us
    handle = await fs.open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw mapError(error, relative);
  }
  try {
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
  } catch (error) {
    throw mapError(error, relative);
  } finally {
    await handle.close();
  }
}

/** Makes sure `absolute` (one level below an already checked real folder) is a folder inside. */
async function ensureDirectory(files: Confinement, absolute: string, relative: string): Promise<string> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const real = await confinedRealpath(files, absolute);
      if (!(await fs.stat(real)).isDirectory()) throw notADirectory(relative);
      return real;
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") throw mapError(error, relative);
    }
    try {
      await fs.mkdir(absolute, { mode: 0o755 });
      return absolute;
    } catch (error) {
      // EEXIST: created concurrently, or a dangling symlink; look again
      if (errnoOf(error) !== "EEXIST") throw mapError(error, relative);
    }
  }
  // still a dangling symlink: where it points cannot be confirmed inside
  throw outsideHome();
}

export async function writeFile(
  files: Confinement,
  path: string,
  data: Uint8Array,
  options: { executable?: boolean } = {},
): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw notAFile(relative);
  const parts = relative.split("/");
  const name = parts.pop() ?? relative;
  let dir = files.home;
  for (let i = 0; i < parts.length; i++) {
    dir = await ensureDirectory(files, join(dir, parts[i] ?? ""), parts.slice(0, i + 1).join("/"));
  }
  let destination = join(dir, name);
  try {
    const real = await confinedRealpath(files, destination);
    if ((await fs.stat(real)).isDirectory()) throw notAFile(relative);
    destination = real;
  } catch (error) {
    // missing (or a dangling symlink): the rename below replaces the name itself, never a target
    if (errnoOf(error) !== "ENOENT") throw mapError(error, relative);
  }
  const mode = options.executable ? 0o755 : 0o644;
  // a short fixed-size name: appending to the real name could pass the 255-byte name limit
  const temp = join(dirname(destination), `.cubicle-${randomBytes(8).toString("hex")}.tmp`);
  try {
    const handle = await fs.open(
      temp,
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
    await fs.rename(temp, destination);
  } catch (error) {
    await fs.rm(temp, { force: true }).catch(() => undefined);
    throw mapError(error, relative);
  }
}

export async function deleteFile(files: Confinement, path: string): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
  const parent = posix.dirname(relative);
  const realParent = await resolveExisting(files, parent === "." ? "" : parent);
  const target = join(realParent, posix.basename(relative));
  try {
    // lstat: a symlink is removed itself, its target is left alone
    const stats = await fs.lstat(target);
    if (stats.isDirectory()) await fs.rm(target, { recursive: true });
    else await fs.unlink(target);
  } catch (error) {
    throw mapError(error, relative);
  }
}
