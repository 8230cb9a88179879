import { randomBytes } from "node:crypto";
import { existsSync, promises as fs, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { extract, type Header, pack } from "tar-stream";
import { fsyncPath, syncFileSystem } from "./durability.ts";
import { excludedFromRevisions } from "./excluded.ts";
import { SharedExclusiveLock, type StoreLock } from "./lock.ts";
import {
  checkName,
  comparePaths,
  entriesSha256,
  entryPath,
  isAddress,
  type Manifest,
  type ManifestEntry,
  parseManifest,
  ROOT_PATH,
  revisionInfo,
} from "./manifest.ts";
import { ObjectWriter } from "./object-writer.ts";
import { planReads } from "./reuse.ts";
import type { CheckpointSealing } from "./sealing.ts";
import {
  CHECKPOINT_REASONS,
  type CheckpointStore,
  CheckpointStoreError,
  type RevisionDescription,
  type RevisionInfo,
  type WriteRevisionInput,
} from "./types.ts";

export interface FileCheckpointStoreOptions {
  /** Seals every object and manifest at rest and gives contents their per-workspace addresses. */
  sealing: CheckpointSealing;
  /**
   * Keeps garbage collection off the objects of writes in flight. Default: one in-process lock per
   * store folder, enough while one process uses it; api replicas sharing it pass replicaStoreLock.
   */
  lock?: StoreLock;
}

export interface FileCheckpointStore extends CheckpointStore {
  readonly rootDir: string;
  /** Deletes objects no revision of any home references. */
  collectGarbage(): Promise<{ removedObjects: number; removedBytes: number }>;
}

/** Contents up to this size are hashed in memory, so an unchanged file is never written at all. */
const IN_MEMORY_LIMIT = 1024 * 1024;
/** Manifests kept in memory, one per home, for the next write's reuse (a few MB each). */
const RECENT_MANIFESTS = 16;
/** A write's leftover temp folder from this process whose owner is no longer known. */
const STALE_TEMP_MS = 24 * 60 * 60 * 1000;

const MANIFEST_FILE = /^([A-Za-z0-9][A-Za-z0-9._-]*)\.json$/;
const TEMP_DIR = /^w-(\d+)-([0-9a-f]+)$/;

/** Default locks and in-flight temp folders, shared by every store on the same root in this process. */
const locks = new Map<string, SharedExclusiveLock>();
const activeTemps = new Set<string>();

function processLock(root: string): SharedExclusiveLock {
  let lock = locks.get(root);
  if (!lock) {
    lock = new SharedExclusiveLock();
    locks.set(root, lock);
  }
  return lock;
}

let lastIdTime = 0;

/** A new revision id: UTC time to the millisecond (strictly increasing here), then randomness. */
function newRevisionId(): { id: string; createdAt: Date } {
  const time = Math.max(Date.now(), lastIdTime + 1);
  lastIdTime = time;
  const createdAt = new Date(time);
  const stamp = createdAt.toISOString().replace(/[-:]/g, "").replace(".", "");
  return { id: `${stamp}-${randomBytes(4).toString("hex")}`, createdAt };
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && "code" in error
    ? String((error as NodeJS.ErrnoException).code)
    : undefined;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === "EPERM";
  }
}

/**
 * A content-addressed checkpoint store on a filesystem:
 *
 *     objects/<address[0..2]>/<address>        each distinct file content of a workspace, once
 *     homes/<homeKey>/revisions/<id>.json      one manifest per complete revision
 *     tmp/w-<pid>-<random>/                    a write in progress (never read)
 *
 * Objects and manifests are sealed (./sealing.ts), temp files included, so no file content, name
 * or link target is ever on disk in the clear. A content's address is keyed per workspace, so
 * deduplication works within a workspace and reveals nothing across them. Chromium's caches are
 * left out of every revision (./excluded.ts).
 *
 * A write seals its new objects into tmp, makes them durable with one flush of the filesystem,
 * renames them into place, writes its manifest into tmp, flushes again and renames the manifest
 * into place: an object is found under its address only once its content is durable, a revision
 * is visible only once whole, and a crash leaves at worst a temp folder, which a later write
 * removes, and objects no manifest names, which garbage collection removes.
 */
export function createFileCheckpointStore(
  rootDir: string,
  options: FileCheckpointStoreOptions,
): FileCheckpointStore {
  const root = resolve(rootDir);
  const objectsDir = join(root, "objects");
  const homesDir = join(root, "homes");
  const tmpDir = join(root, "tmp");
  const { sealing } = options;
  const lock = options.lock ?? processLock(root);

  const revisionsDir = (homeKey: string) => join(homesDir, checkName("home key", homeKey), "revisions");
  const manifestPath = (homeKey: string, id: string) =>
    join(revisionsDir(homeKey), `${checkName("revision id", id)}.json`);
  const objectPath = (address: string) => join(objectsDir, address.slice(0, 2), address);
  const manifestContext = (homeKey: string, id: string) => `manifest/${homeKey}/${id}`;

  /** mkdir -p, fsyncing the parent of every folder it created so the new folder survives a crash. */
  async function makeDurableDir(path: string): Promise<void> {
    const first = await fs.mkdir(path, { recursive: true });
    if (first === undefined) return;
    let dir = path;
    const parents: string[] = [];
    while (dir.length >= first.length) {
      const parent = resolve(dir, "..");
      parents.push(parent);
      if (parent === dir) break;
      dir = parent;
    }
    for (const parent of parents) await fsyncPath(parent);
  }

  async function removeStaleTemps(): Promise<void> {
    let names: string[];
    try {
      names = await fs.readdir(tmpDir);
    } catch (error) {
      if (errorCode(error) === "ENOENT") return;
      throw error;
    }
    for (const name of names) {
      const path = join(tmpDir, name);
      if (activeTemps.has(path)) continue;
      const match = TEMP_DIR.exec(name);
      const pid = match ? Number(match[1]) : Number.NaN;
      let stale: boolean;
      if (!match || pid === process.pid || !processAlive(pid)) {
        // ours but not in flight, or its writer is gone
        stale = true;
      } else {
        const stat = await fs.stat(path).catch(() => null);
        stale = stat !== null && Date.now() - stat.mtimeMs > STALE_TEMP_MS;
      }
      if (stale) await fs.rm(path, { recursive: true, force: true });
    }
  }

  async function write(input: WriteRevisionInput): Promise<RevisionInfo> {
    const homeKey = checkName("home key", input.homeKey);
    const workspaceId = checkName("workspace id", input.workspaceId);
    const parentId = input.parentId === null ? null : checkName("parent id", input.parentId);
    const reason = input.reason;
    if (!CHECKPOINT_REASONS.includes(reason)) {
      throw new CheckpointStoreError(
        "INVALID_ARGUMENT",
        `unknown checkpoint reason ${JSON.stringify(reason)}`,
      );
    }
    const temp = join(tmpDir, `w-${process.pid}-${randomBytes(8).toString("hex")}`);
    activeTemps.add(temp);
    try {
      await fs.mkdir(tmpDir, { recursive: true });
      await removeStaleTemps().catch(() => undefined);
      await fs.mkdir(temp);
      return await lock.shared(() => writeRevision(temp, { homeKey, workspaceId, parentId, reason }, input));
    } catch (error) {
      throw noSpaceOr(error);
    } finally {
      await fs.rm(temp, { recursive: true, force: true }).catch(() => undefined);
      activeTemps.delete(temp);
    }
  }

  async function writeRevision(
    temp: string,
    { homeKey, workspaceId, parentId, reason }: RevisionDescription,
    source: WriteRevisionInput,
  ): Promise<RevisionInfo> {
    const entries = new Map<string, ManifestEntry>();
    /** Stamps of the listed files that are read: recorded with what is read. */
    const stamps = new Map<string, string>();
    const claimed = new Set<string>();
    /** New objects, sealed in temp: renamed into objects/ only once all of them are durable. */
    const fresh: Array<{ tempFile: string; address: string }> = [];
    let newBytes = 0;
    let tempCounter = 0;
    const objects = new ObjectWriter();

    /** Addresses one file's content and has it sealed into temp once; large contents stream through. */
    async function storeContent(content: AsyncIterable<unknown>): Promise<{ address: string; size: number }> {
      const addressing = sealing.addresser(workspaceId);
      const sealer = sealing.sealer(workspaceId);
      const buffered: Buffer[] = [];
      let size = 0;
      let spilled = false;
      const tempFile = join(temp, `o-${tempCounter++}`);
      for await (const value of content) {
        const chunk = value as Buffer;
        addressing.update(chunk);
        size += chunk.length;
        if (spilled) {
          await objects.write(tempFile, sealer.update(chunk));
        } else {
          buffered.push(chunk);
          if (size > IN_MEMORY_LIMIT) {
            spilled = true;
            await objects.open(tempFile);
            await objects.write(tempFile, sealer.update(Buffer.concat(buffered)));
            buffered.length = 0;
          }
        }
      }
      const address = addressing.digest("hex");
      if (claimed.has(address) || existsSync(objectPath(address))) {
        if (spilled) await objects.close(tempFile, { remove: true });
        return { address, size };
      }
      claimed.add(address);
      newBytes += size;
      const rest = Buffer.concat([sealer.update(Buffer.concat(buffered)), sealer.final()]);
      buffered.length = 0;
      if (spilled) {
        await objects.write(tempFile, rest);
        await objects.close(tempFile, { remove: false });
      } else {
        await objects.file(tempFile, rest);
      }
      fresh.push({ tempFile, address });
      return { address, size };
    }

    let tar: ReadableStream<Uint8Array>;
    if (source.changes) {
      const { list, read } = source.changes;
      const [listing, base] = await Promise.all([
        list(),
        parentId === null ? null : parentManifest(homeKey, parentId),
      ]);
      if (listing === null) {
        tar = await read(null);
      } else {
        const { known, wanted, stamped } = planReads(
          listing,
          base?.workspaceId === workspaceId ? base.entries : [],
        );
        for (const entry of known) entries.set(entry.path, entry);
        for (const [path, stamp] of stamped) stamps.set(path, stamp);
        // an unchanged home is not read at all
        tar =
          wanted.length === 0 ? new ReadableStream({ start: (done) => done.close() }) : await read(wanted);
      }
    } else {
      tar = source.tar;
    }
    const archive = Readable.fromWeb(tar as NodeReadableStream<Uint8Array>);
    const parser = extract();
    archive.on("error", (error) => parser.destroy(error));
    archive.pipe(parser);
    try {
      for await (const entry of parser) {
        const header: Header = entry.header;
        const path = entryPath(header.name);
        if (excludedFromRevisions(path)) {
          // never stored, so never restored: Chromium rebuilds what it finds missing
          entry.resume();
          continue;
        }
        const mode = (header.mode ?? 0) & 0o7777;
        const mtime = header.mtime ? Math.floor(header.mtime.getTime() / 1000) : 0;
        switch (header.type) {
          case "directory":
            entry.resume();
            entries.set(path, { path, type: "directory", mode, mtime });
            break;
          case "file":
          case "contiguous-file": {
            if (path === ROOT_PATH)
              throw invalid(`archive entry ${JSON.stringify(header.name)} names the home as a file`);
            const { address, size } = await storeContent(entry);
            entries.set(path, { path, type: "file", mode, mtime, size, address, stamp: stamps.get(path) });
            break;
          }
          case "symlink":
            entry.resume();
            if (path === ROOT_PATH)
              throw invalid(`archive entry ${JSON.stringify(header.name)} names the home as a link`);
            entries.set(path, { path, type: "symlink", mode, mtime, target: header.linkname ?? "" });
            break;
          case "link": {
            // a hard link: the same content again, which content addressing stores once anyway
            entry.resume();
            const target = entries.get(entryPath(header.linkname ?? ""));
            if (target?.type !== "file") {
              throw invalid(
                `archive entry ${JSON.stringify(header.name)} is a hard link to something not a file`,
              );
            }
            entries.set(path, { ...target, path, mode: mode || target.mode, mtime, stamp: stamps.get(path) });
            break;
          }
          default:
            throw invalid(
              `archive entry ${JSON.stringify(header.name)} is a ${header.type}; checkpoints keep files, folders and symlinks`,
            );
        }
      }
    } catch (error) {
      archive.destroy();
      parser.destroy();
      await objects.terminate();
      // the writer failing is the store's own failure, not a bad archive
      if (error instanceof CheckpointStoreError || error === objects.broken) throw error;
      throw new CheckpointStoreError(
        "INVALID_ARCHIVE",
        `the home archive could not be read: ${describe(error)}`,
        {
          cause: error,
        },
      );
    }
    try {
      await objects.finish();
      if (fresh.length > 0) {
        // contents first, then their names: an object is never found under its address unwritten
        await syncFileSystem(temp);
        for (const { tempFile, address } of fresh) await objects.move(tempFile, objectPath(address));
        await objects.finish();
      }
    } finally {
      await objects.terminate();
    }

    const sorted = [...entries.values()].sort((a, b) => comparePaths(a.path, b.path));
    let sizeBytes = 0;
    let fileCount = 0;
    for (const entry of sorted) {
      if (entry.type !== "file") continue;
      sizeBytes += entry.size;
      fileCount += 1;
    }
    const { id, createdAt } = newRevisionId();
    const manifest: Manifest = {
      version: 2,
      id,
      homeKey,
      workspaceId,
      parentId,
      reason,
      createdAt: createdAt.toISOString(),
      sizeBytes,
      fileCount,
      newBytes,
      sha256: entriesSha256(sorted),
      entries: sorted,
    };
    const manifestTemp = join(temp, "manifest.json");
    const handle = await fs.open(manifestTemp, "wx");
    try {
      const sealer = sealing.sealer(manifestContext(homeKey, id));
      // a few MB into the page cache: written at once, where the thread pool took ten times as long
      writeSync(
        handle.fd,
        Buffer.concat([sealer.update(Buffer.from(JSON.stringify(manifest), "utf8")), sealer.final()]),
      );
      // with new objects, one flush makes their names and the manifest durable together
      if (fresh.length === 0) await handle.sync();
    } finally {
      await handle.close();
    }
    if (fresh.length > 0) await syncFileSystem(temp);
    const dir = revisionsDir(homeKey);
    await makeDurableDir(dir);
    await fs.rename(manifestTemp, manifestPath(homeKey, id));
    await fsyncPath(dir);
    remember(manifest);
    return revisionInfo(manifest);
  }

  /** The latest revisions this store wrote, by home: usually the parent of the next one. */
  const recent = new Map<string, Manifest>();
  function remember(manifest: Manifest): void {
    recent.delete(manifest.homeKey);
    recent.set(manifest.homeKey, manifest);
    for (const key of recent.keys()) {
      if (recent.size <= RECENT_MANIFESTS) break;
      recent.delete(key);
    }
  }

  /**
   * The parent revision whose files an incremental write may reuse, or null (everything is then
   * read). A remembered manifest is used only while its file still exists: under the shared lock,
   * that means its objects do too.
   */
  async function parentManifest(homeKey: string, id: string): Promise<Manifest | null> {
    const known = recent.get(homeKey);
    if (known?.id === id && existsSync(manifestPath(homeKey, id))) return known;
    return loadManifest(homeKey, id).catch(() => null);
  }

  async function loadManifest(homeKey: string, id: string): Promise<Manifest> {
    const path = manifestPath(homeKey, id);
    let sealed: Buffer;
    try {
      sealed = await fs.readFile(path);
    } catch (error) {
      if (errorCode(error) === "ENOENT") {
        throw new CheckpointStoreError("NOT_FOUND", `home ${homeKey} has no checkpoint revision ${id}`);
      }
      throw error;
    }
    const where = `${homeKey}/${id}`;
    const text = sealing.openBuffer(sealed, manifestContext(homeKey, id), `checkpoint manifest ${where}`);
    return parseManifest(text.toString("utf8"), where);
  }

  async function manifestIds(homeKey: string): Promise<string[]> {
    try {
      const names = await fs.readdir(revisionsDir(homeKey));
      return names.flatMap((name) => {
        const match = MANIFEST_FILE.exec(name);
        return match?.[1] ? [match[1]] : [];
      });
    } catch (error) {
      if (errorCode(error) === "ENOENT") return [];
      throw error;
    }
  }

  async function list(homeKey: string): Promise<RevisionInfo[]> {
    checkName("home key", homeKey);
    const ids = await manifestIds(homeKey);
    const infos: RevisionInfo[] = [];
    for (const id of ids) {
      try {
        infos.push(revisionInfo(await loadManifest(homeKey, id)));
      } catch (error) {
        // removed meanwhile
        if (error instanceof CheckpointStoreError && error.code === "NOT_FOUND") continue;
        throw error;
      }
    }
    return infos.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
  }

  async function read(homeKey: string, revisionId: string): Promise<ReadableStream<Uint8Array>> {
    const manifest = await loadManifest(homeKey, revisionId);
    const archive = pack();
    const produce = async () => {
      for (const entry of manifest.entries) {
        const name = entry.path === ROOT_PATH ? "./" : `./${entry.path}`;
        const mtime = new Date(entry.mtime * 1000);
        if (entry.type === "directory") {
          await addEntry({
            name: name.endsWith("/") ? name : `${name}/`,
            type: "directory",
            mode: entry.mode,
            mtime,
          });
        } else if (entry.type === "symlink") {
          await addEntry({ name, type: "symlink", mode: entry.mode, mtime, linkname: entry.target });
        } else {
          await addFile(entry, name, mtime);
        }
      }
      archive.finalize();
    };
    const addEntry = (header: Partial<Header> & Pick<Header, "name">) =>
      new Promise<void>((done, fail) => {
        archive.entry(header, (error) => (error ? fail(error) : done()));
      });
    const addFile = async (entry: Extract<ManifestEntry, { type: "file" }>, name: string, mtime: Date) => {
      const objectFile = objectPath(entry.address);
      try {
        await fs.access(objectFile);
      } catch (error) {
        throw new CheckpointStoreError(
          "CORRUPT",
          `content of ${entry.path} (${entry.address}) is missing from the store`,
          {
            cause: error,
          },
        );
      }
      let settle!: (error?: Error | null) => void;
      const added = new Promise<void>((done, fail) => {
        settle = (error) => (error ? fail(error) : done());
      });
      // awaited below; when the content fails first, the archive's destruction rejects it unseen
      added.catch(() => undefined);
      const sink = archive.entry({ name, type: "file", mode: entry.mode, mtime, size: entry.size }, (error) =>
        settle(error),
      );
      // the archive's destruction destroys this entry too, with the same error
      sink.on("error", (error: Error) => settle(error));
      const plaintext = sealing.openObject(
        objectFile,
        manifest.workspaceId,
        entry.address,
        `content of ${entry.path} (${entry.address})`,
      );
      for await (const chunk of plaintext) {
        if (!sink.write(chunk)) await new Promise<void>((drained) => sink.once("drain", () => drained()));
      }
      sink.end(null);
      await added;
    };
    produce().catch((error: unknown) =>
      archive.destroy(error instanceof Error ? error : new Error(String(error))),
    );

    const chunks = archive[Symbol.asyncIterator]();
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) {
            controller.close();
            return;
          }
          const chunk = next.value as Buffer;
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        } catch (error) {
          controller.error(error);
        }
      },
      cancel() {
        archive.destroy(new Error("checkpoint read cancelled"));
      },
    });
  }

  async function remove(homeKey: string, revisionIds: string[]): Promise<void> {
    const paths = revisionIds.map((id) => manifestPath(homeKey, id));
    await lock.exclusive(async () => {
      for (const path of paths) await fs.rm(path, { force: true });
      if (paths.length > 0) await fsyncPath(revisionsDir(homeKey)).catch(() => undefined);
      await sweep();
    });
  }

  async function collectGarbage() {
    return lock.exclusive(sweep);
  }

  /** Mark every object a manifest of any home names, then delete the rest. */
  async function sweep(): Promise<{ removedObjects: number; removedBytes: number }> {
    const marked = new Set<string>();
    let homes: string[] = [];
    try {
      homes = await fs.readdir(homesDir);
    } catch (error) {
      if (errorCode(error) !== "ENOENT") throw error;
    }
    for (const home of homes) {
      for (const id of await manifestIds(home)) {
        let manifest: Manifest;
        try {
          manifest = await loadManifest(home, id);
        } catch (error) {
          if (error instanceof CheckpointStoreError && error.code === "NOT_FOUND") continue;
          // an unreadable manifest might still need its objects: collect nothing rather than guess
          throw error;
        }
        for (const entry of manifest.entries) if (entry.type === "file") marked.add(entry.address);
      }
    }
    let removedObjects = 0;
    let removedBytes = 0;
    let prefixes: string[] = [];
    try {
      prefixes = await fs.readdir(objectsDir);
    } catch (error) {
      if (errorCode(error) !== "ENOENT") throw error;
    }
    for (const prefix of prefixes) {
      const dir = join(objectsDir, prefix);
      const names = await fs.readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        if (!isAddress(name) || marked.has(name)) continue;
        const path = join(dir, name);
        const stat = await fs.stat(path).catch(() => null);
        if (!stat) continue;
        await fs.rm(path, { force: true });
        removedObjects += 1;
        removedBytes += stat.size;
      }
    }
    return { removedObjects, removedBytes };
  }

  return { rootDir: root, write, read, list, remove, collectGarbage };
}

const isNoSpace = (error: unknown) => ["ENOSPC", "EDQUOT"].includes(errorCode(error) ?? "");

/** A full filesystem said as the store's own failure, not as the errno of whichever write met it. */
function noSpaceOr(error: unknown): unknown {
  if (!isNoSpace(error)) return error;
  return new CheckpointStoreError("NO_SPACE", `no space left in the checkpoint store: ${describe(error)}`, {
    cause: error,
  });
}

function invalid(message: string): CheckpointStoreError {
  return new CheckpointStoreError("INVALID_ARCHIVE", message);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
