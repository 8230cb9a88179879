import { constants, promises as fs } from "node:fs";
import { posix, sep } from "node:path";
import { outsideHome, ProviderError } from "../contract/index.ts";

/**
 * Resolve-and-use in one step for files a machine's own programs can change under us. Every path
 * component is opened with O_NOFOLLOW relative to the folder opened before it: on Linux
 * `/proc/self/fd/<fd>/<name>` is openat(fd, name), so the kernel never re-resolves what was
 * already checked. A symlink met on the way is read and resolved here, against the folders already
 * open, and refused unless it stays under one of the roots; a folder swapped for a symlink after
 * it was looked at therefore cannot lead an operation anywhere else.
 */

const MAX_LINKS = 40;
const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path that names `name` inside the open folder `dir`, without re-resolving `dir`. */
export const inside = (dir: fs.FileHandle, name: string) => `/proc/self/fd/${dir.fd}/${name}`;

function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/** `inside` for a name read as bytes: one that is not UTF-8 must be looked up as those bytes. */
export const insideBytes = (dir: fs.FileHandle, name: Buffer) =>
  Buffer.concat([Buffer.from(inside(dir, "")), name]);

export async function openDirectory(path: string | Buffer): Promise<fs.FileHandle> {
  return fs.open(path, DIRECTORY_FLAGS);
}

export interface Walked {
  /** The open folder holding the last component (the caller closes it with `close`). */
  dir: fs.FileHandle;
  /** The last component, unresolved when it is missing (or `followLast` was off); null when the path is a folder itself. */
  name: string | null;
  /** The real absolute path the walk reached. */
  real: string;
  close(): Promise<void>;
}

const parts = (path: string) => path.split("/").filter((part) => part !== "" && part !== ".");

/**
 * Walks `relative` from `roots[0]`. `followLast` resolves a symlink in the last place too;
 * `create` makes missing folders on the way (mode 0755). Refusals are the contract's errors.
 */
export async function walk(
  roots: readonly string[],
  relative: string,
  options: { followLast: boolean; create?: boolean },
): Promise<Walked> {
  const opened: fs.FileHandle[] = [];
  const open = async (path: string) => {
    const handle = await openDirectory(path);
    opened.push(handle);
    return handle;
  };
  const stack: { dir: fs.FileHandle; real: string }[] = [];
  const restartAt = async (root: string) => {
    stack.length = 0;
    stack.push({ dir: await open(root), real: root });
  };
  const fail = async (error: Error): Promise<never> => {
    await Promise.all(opened.map((handle) => handle.close().catch(() => undefined)));
    throw error;
  };
  const done = (dir: fs.FileHandle, name: string | null, real: string): Walked => ({
    dir,
    name,
    real,
    close: async () => {
      await Promise.all(opened.map((handle) => handle.close().catch(() => undefined)));
    },
  });
  try {
    await restartAt(roots[0] ?? "/");
  } catch (error) {
    return fail(new ProviderError("PROVIDER_FAILURE", "the home cannot be opened", { cause: error }));
  }
  const todo = parts(relative);
  let links = 0;
  const expand = async (target: string) => {
    if (++links > MAX_LINKS) return fail(outsideHome());
    if (posix.isAbsolute(target)) {
      const root = roots.find((r) => target === r || target.startsWith(r.endsWith(sep) ? r : r + sep));
      if (!root) return fail(outsideHome());
      await restartAt(root);
      todo.unshift(...parts(target.slice(root.length)));
    } else {
      todo.unshift(...parts(target));
    }
  };
  while (todo.length > 0) {
    const name = todo.shift() ?? "";
    const top = stack.at(-1);
    if (!top) return fail(outsideHome());
    if (name === "..") {
      // never above the root the walk is in
      if (stack.length <= 1) return fail(outsideHome());
      stack.pop();
      continue;
    }
    const path = inside(top.dir, name);
    const real = posix.join(top.real, name);
    if (todo.length === 0) {
      const stats = await fs.lstat(path).catch(() => null);
      if (stats?.isSymbolicLink() && options.followLast) {
        await expand(await fs.readlink(path));
        continue;
      }
      return done(top.dir, name, real);
    }
    try {
      stack.push({ dir: await open(path), real });
      continue;
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT" && options.create) {
        await fs.mkdir(path, { mode: 0o755 }).catch((mkdirError: unknown) => {
          if (errnoOf(mkdirError) !== "EEXIST") throw mkdirError;
        });
        todo.unshift(name);
        if (++links > MAX_LINKS) return fail(outsideHome());
        continue;
      }
      if (code === "ENOENT") {
        return fail(new ProviderError("FILE_NOT_FOUND", `no such file or folder: ${relative || "."}`));
      }
      if (code !== "ELOOP" && code !== "ENOTDIR") return fail(error as Error);
    }
    const target = await fs.readlink(path).catch(() => null);
    if (target === null) {
      return fail(new ProviderError("NOT_A_DIRECTORY", `not a folder: ${relative || "."}`));
    }
    await expand(target);
  }
  const top = stack.at(-1);
  if (!top) return fail(outsideHome());
  return done(top.dir, null, top.real);
}

/** Removes `name` in the open folder `dir`, a folder with its contents, never following a symlink. */
export async function removeInside(dir: fs.FileHandle, name: string | Buffer): Promise<void> {
  const path = typeof name === "string" ? inside(dir, name) : insideBytes(dir, name);
  let child: fs.FileHandle | null = null;
  try {
    child = await openDirectory(path);
  } catch {
    // not a folder (or a symlink): removed itself
    await fs.unlink(path);
    return;
  }
  try {
    // as bytes: a name that is not UTF-8, read as text, would be looked up as U+FFFD and stay
    for (const entry of await fs.readdir(`/proc/self/fd/${child.fd}`, { encoding: "buffer" })) {
      await removeInside(child, entry);
    }
  } finally {
    await child.close();
  }
  await fs.rmdir(path);
}
