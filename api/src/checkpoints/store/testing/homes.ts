/** Helpers for the store's tests: real homes on disk, archived and extracted by real GNU tar. */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import {
  outputOf,
  PATHS_TAR_ARGS,
  parseStampedListing,
  pathsInput,
  stampedListingFindArgs,
} from "@cubicle/providers/kernel";
import type { HomeChanges } from "../types.ts";

/** ENCRYPTION_KEY and a previous one, as the store's tests seal with them. */
export const TEST_ENCRYPTION_KEYS = {
  current: "checkpoint-test-key-0123456789abcdefghijklmnop",
  previous: [] as string[],
};

/** `tar -C dir -cf - .` as a Web stream, the way a provider's exportHome gives a home. */
export function tarOf(dir: string): ReadableStream<Uint8Array> {
  const child = spawn("tar", ["-C", dir, "--numeric-owner", "-cf", "-", "."], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)));
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => {
    stderr += text;
  });
  return outputOf(child, async () => ((await exited) === 0 ? null : new Error(`tar exited: ${stderr}`)), {
    cancel: () => child.kill("SIGKILL"),
  });
}

/** What an incremental export of a home asked for, and how it answered. */
export interface ListedHome extends HomeChanges {
  /** The paths each read asked for. */
  asked: string[][];
}

/**
 * The home at `dir` as a provider with `listHome` gives it: listed by `find`, then the entries the
 * store asks for archived by `tar -T`, as the desktop provider does. `meanwhile` runs between the
 * two, or (with `afterRead`) once tar has read everything, the archive held until then.
 */
export function changesOf(
  dir: string,
  options: { meanwhile?: () => Promise<void>; afterRead?: boolean } = {},
): ListedHome {
  const asked: string[][] = [];
  return {
    asked,
    async list() {
      const listedAt = Date.now() / 1000;
      const find = spawn("find", stampedListingFindArgs(dir), { stdio: ["ignore", "pipe", "inherit"] });
      const chunks: Buffer[] = [];
      find.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
      const code = await new Promise<number | null>((done) => find.once("close", done));
      if (code !== 0) throw new Error(`find exited ${code}`);
      return parseStampedListing(Buffer.concat(chunks), listedAt);
    },
    async read(paths) {
      if (paths === null) throw new Error("a listed home is read in part");
      asked.push([...paths]);
      if (!options.afterRead) await options.meanwhile?.();
      const child = spawn("tar", ["-C", dir, "--numeric-owner", ...PATHS_TAR_ARGS, "-cf", "-"], {
        stdio: ["pipe", "pipe", "inherit"],
      });
      child.stdin.end(pathsInput(paths));
      const exited = new Promise<number | null>((done) => child.once("close", done));
      const tar = outputOf(child, async () => ((await exited) === 0 ? null : new Error("tar failed")), {
        cancel: () => child.kill("SIGKILL"),
      });
      if (!options.afterRead) return tar;
      const whole = await collect(tar);
      await options.meanwhile?.();
      return new Blob([new Uint8Array(whole)]).stream();
    },
  };
}

/** Extracts a tar stream into `dir` with `tar -xpf -`, as a provider's importHome would. */
export async function untarInto(tar: ReadableStream<Uint8Array>, dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const child = spawn("tar", ["-C", dir, "-xpf", "-", "--no-same-owner"], {
    stdio: ["pipe", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => {
    stderr += text;
  });
  const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)));
  await pipeline(Readable.fromWeb(tar as NodeReadableStream<Uint8Array>), child.stdin);
  const code = await exited;
  if (code !== 0) throw new Error(`tar -x exited ${code}: ${stderr}`);
}

export interface TreeEntry {
  type: "file" | "directory" | "symlink";
  mode: number;
  sha256?: string;
  target?: string;
}

/** Every path under `dir` (the root included as ".") with its type, mode and content hash or link target. */
export async function snapshot(dir: string): Promise<Map<string, TreeEntry>> {
  const tree = new Map<string, TreeEntry>();
  const rootStat = await fs.lstat(dir);
  tree.set(".", { type: "directory", mode: rootStat.mode & 0o7777 });
  const walk = async (relative: string) => {
    const names = (await fs.readdir(join(dir, relative))).sort();
    for (const name of names) {
      const path = relative === "" ? name : `${relative}/${name}`;
      const full = join(dir, path);
      const stat = await fs.lstat(full);
      const mode = stat.mode & 0o7777;
      if (stat.isSymbolicLink()) {
        tree.set(path, { type: "symlink", mode: 0, target: await fs.readlink(full) });
      } else if (stat.isDirectory()) {
        tree.set(path, { type: "directory", mode });
        await walk(path);
      } else {
        const sha256 = createHash("sha256")
          .update(await fs.readFile(full))
          .digest("hex");
        tree.set(path, { type: "file", mode, sha256 });
      }
    }
  };
  await walk("");
  return tree;
}

/** Deterministic pseudo-random bytes (fast, incompressible enough for tests). */
export function pseudoRandomBytes(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < size; i += 4) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    if (i + 4 <= size) out.writeUInt32LE(state, i);
    else for (let j = i; j < size; j += 1) out[j] = (state >>> ((j - i) * 8)) & 0xff;
  }
  return out;
}

export async function writeFile(
  dir: string,
  path: string,
  data: Buffer | string,
  mode = 0o644,
): Promise<void> {
  const full = join(dir, path);
  await fs.mkdir(join(full, ".."), { recursive: true });
  await fs.writeFile(full, data);
  await fs.chmod(full, mode);
}

/** Drains a Web stream into one buffer. */
export async function collect(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Files in the store's objects folder. */
export async function objectCount(root: string): Promise<number> {
  let count = 0;
  const prefixes = await fs.readdir(join(root, "objects")).catch(() => [] as string[]);
  for (const prefix of prefixes) count += (await fs.readdir(join(root, "objects", prefix))).length;
  return count;
}
