import { type FileEntry, ProviderError, tooLarge } from "../../src/contract/index.ts";
import { homeRelativePath } from "../../src/kernel/home-path.ts";

export interface FakeFile {
  kind: "file";
  /** Replaced, never mutated in place, so a snapshot (an export in progress) can keep a reference. */
  data: Uint8Array;
  executable: boolean;
  mtime: Date;
}

export interface FakeDirectory {
  kind: "directory";
  children: Map<string, FakeNode>;
  mtime: Date;
}

export type FakeNode = FakeFile | FakeDirectory;

/** One entry of a whole-tree walk, parents before children, siblings sorted by name. */
export interface WalkEntry {
  path: string;
  node: FakeNode;
}

export type Clock = () => Date;

export const newDirectory = (mtime: Date): FakeDirectory => ({
  kind: "directory",
  children: new Map(),
  mtime,
});

const notFound = (path: string) => new ProviderError("FILE_NOT_FOUND", `no such file or folder: ${path}`);
const notADirectory = (path: string) => new ProviderError("NOT_A_DIRECTORY", `not a folder: ${path || "."}`);

const segments = (relative: string) => (relative === "" ? [] : relative.split("/"));

const concat = (a: Uint8Array, b: Uint8Array) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};

/**
 * A home held in memory: a tree of folders and files. Every public method takes a caller's path
 * and runs it through `homeRelativePath`, so the fake refuses exactly what real providers refuse.
 */
export class FakeHome {
  private root: FakeDirectory;

  constructor(private readonly clock: Clock) {
    this.root = newDirectory(clock());
  }

  /** The node at `path`, or undefined when it (or a parent) does not exist. */
  lookup(path: string): FakeNode | undefined {
    let node: FakeNode = this.root;
    for (const name of segments(homeRelativePath(path))) {
      if (node.kind !== "directory") return undefined;
      const child = node.children.get(name);
      if (!child) return undefined;
      node = child;
    }
    return node;
  }

  list(path: string): FileEntry[] {
    const relative = homeRelativePath(path);
    const node = this.lookup(relative);
    if (!node) throw notFound(relative);
    if (node.kind !== "directory") throw notADirectory(relative);
    return [...node.children.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, child]) => ({
        name,
        path: relative === "" ? name : `${relative}/${name}`,
        type: child.kind,
        size: child.kind === "file" ? child.data.length : 0,
        // Folders are kept with mode 0755, so they count as executable like on a real disk.
        executable: child.kind === "file" ? child.executable : true,
        modifiedAt: child.mtime.toISOString(),
      }));
  }

  read(path: string, maxBytes: number): Uint8Array {
    const relative = homeRelativePath(path);
    const node = this.lookup(relative);
    if (!node) throw notFound(relative);
    if (node.kind !== "file") throw new ProviderError("NOT_A_FILE", `not a file: ${relative || "."}`);
    if (node.data.length > maxBytes) throw tooLarge(maxBytes);
    return node.data.slice();
  }

  write(path: string, data: Uint8Array, executable: boolean): void {
    const relative = homeRelativePath(path);
    if (relative === "") throw new ProviderError("NOT_A_FILE", "the home is a folder, not a file");
    const { parent, name } = this.parentOf(relative, true);
    if (parent.children.get(name)?.kind === "directory") {
      throw new ProviderError("NOT_A_FILE", `not a file: ${relative}`);
    }
    parent.children.set(name, { kind: "file", data: data.slice(), executable, mtime: this.clock() });
    parent.mtime = this.clock();
  }

  /**
   * What a shell redirection does: `truncate` makes an empty file (keeping its exec bit, as
   * `>` does), otherwise bytes are appended; the parent folder must already exist.
   */
  append(path: string, data: Uint8Array, truncate: boolean): void {
    const relative = homeRelativePath(path);
    const { parent, name } = this.parentOf(relative, false);
    const existing = parent.children.get(name);
    if (existing?.kind === "directory") throw new ProviderError("NOT_A_FILE", `not a file: ${relative}`);
    const before = existing && !truncate ? existing.data : new Uint8Array(0);
    const file: FakeFile = {
      kind: "file",
      data: data.length === 0 ? before : concat(before, data),
      executable: existing?.executable ?? false,
      mtime: this.clock(),
    };
    parent.children.set(name, file);
    if (!existing) parent.mtime = this.clock();
  }

  delete(path: string): void {
    const relative = homeRelativePath(path);
    if (relative === "") throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
    const { parent, name } = this.parentOf(relative, false);
    if (!parent.children.delete(name)) throw notFound(relative);
    parent.mtime = this.clock();
  }

  /** Every entry below the home, parents first, in name order (what an export archives). */
  walk(): WalkEntry[] {
    const out: WalkEntry[] = [];
    const visit = (dir: FakeDirectory, prefix: string) => {
      for (const name of [...dir.children.keys()].sort()) {
        const node = dir.children.get(name);
        if (!node) continue;
        const path = prefix === "" ? name : `${prefix}/${name}`;
        out.push({ path, node });
        if (node.kind === "directory") visit(node, path);
      }
    };
    visit(this.root, "");
    return out;
  }

  /** Swaps in a tree built elsewhere in one step, so an import is all-or-nothing. */
  replaceRoot(root: FakeDirectory): void {
    this.root = root;
  }

  private parentOf(relative: string, create: boolean): { parent: FakeDirectory; name: string } {
    const parts = segments(relative);
    const name = parts.pop();
    if (name === undefined) throw new ProviderError("INVALID_PATH", "the path names the home itself");
    let dir = this.root;
    let walked = "";
    for (const part of parts) {
      walked = walked === "" ? part : `${walked}/${part}`;
      const child = dir.children.get(part);
      if (!child) {
        if (!create) throw notFound(walked);
        const made = newDirectory(this.clock());
        dir.children.set(part, made);
        dir.mtime = made.mtime;
        dir = made;
      } else if (child.kind === "directory") {
        dir = child;
      } else {
        throw notADirectory(walked);
      }
    }
    return { parent: dir, name };
  }
}
