import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { fileURLToPath } from "node:url";
import { extract, pack } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileCheckpointStore, type FileCheckpointStore } from "./file-store.ts";
import { selectForRemoval } from "./retention.ts";
import { createCheckpointSealing } from "./sealing.ts";
import {
  collect,
  objectCount,
  pseudoRandomBytes,
  snapshot,
  TEST_ENCRYPTION_KEYS,
  tarOf,
  untarInto,
  writeFile,
} from "./testing/homes.ts";
import { CheckpointStoreError } from "./types.ts";

const here = dirname(fileURLToPath(import.meta.url));
const WS = "ws-1";
let work: string;
let root: string;
let store: FileCheckpointStore;

beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), "cubicle-checkpoints-"));
  root = join(work, "store");
  store = createFileCheckpointStore(root, { sealing: createCheckpointSealing(TEST_ENCRYPTION_KEYS) });
});

afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

async function restore(homeKey: string, id: string, name: string): Promise<string> {
  const dir = join(work, name);
  await untarInto(await store.read(homeKey, id), dir);
  return dir;
}

async function makeHome(name: string): Promise<string> {
  const home = join(work, name);
  await fs.mkdir(home, { recursive: true });
  await writeFile(home, "notes.txt", "hello\n");
  await writeFile(home, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755);
  await writeFile(home, "secret/key", "s3cr3t", 0o600);
  await fs.chmod(join(home, "secret"), 0o700);
  await writeFile(home, "a/b/c/d/deep.json", JSON.stringify({ deep: true }));
  await writeFile(home, "big/blob.bin", pseudoRandomBytes(5 * 1024 * 1024, 1));
  await writeFile(home, "empty-file", "");
  await fs.mkdir(join(home, "empty-dir/nested-empty"), { recursive: true });
  await fs.symlink("notes.txt", join(home, "link-to-notes"));
  await fs.symlink("/etc/hostname", join(home, "absolute-link"));
  await fs.symlink("does/not/exist", join(home, "dangling-link"));
  await fs.symlink("a/b", join(home, "dir-link"));
  await fs.link(join(home, "notes.txt"), join(home, "hard-link-to-notes"));
  await writeFile(home, "name with spaces & ünïcødé.txt", "odd names");
  await writeFile(home, `long/${"x".repeat(120)}/${"y".repeat(120)}.txt`, "long path");
  return home;
}

describe("file checkpoint store", () => {
  it("round-trips a home exactly: files, empty folders, symlinks, modes, nested and long paths, 5 MB", async () => {
    const home = await makeHome("home");
    const info = await store.write({
      workspaceId: WS,
      homeKey: "bot-1",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(info).toMatchObject({ homeKey: "bot-1", parentId: null, reason: "manual", fileCount: 9 });
    expect(info.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(info.sizeBytes).toBeGreaterThan(5 * 1024 * 1024);
    // the hard link's content is stored once
    expect(info.newBytes).toBe(info.sizeBytes - "hello\n".length);

    const restored = await restore("bot-1", info.id, "restored");
    expect(await snapshot(restored)).toEqual(await snapshot(home));
    expect(await store.list("bot-1")).toEqual([info]);
  });

  it("reads the same bytes twice and lists revisions newest first", async () => {
    const home = await makeHome("home");
    const first = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "idle",
      tar: tarOf(home),
    });
    const second = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: first.id,
      reason: "stop",
      tar: tarOf(home),
    });
    expect(second.id > first.id).toBe(true);
    expect(second.sha256).toBe(first.sha256);
    expect((await store.list("h")).map((r) => r.id)).toEqual([second.id, first.id]);
    expect(
      (await collect(await store.read("h", first.id))).equals(
        await collect(await store.read("h", second.id)),
      ),
    ).toBe(true);
    expect(await store.list("other")).toEqual([]);
  });

  it("stores an unchanged home again for (almost) nothing", async () => {
    const home = join(work, "home");
    for (let i = 0; i < 2_000; i += 1) {
      await writeFile(home, `dir-${i % 40}/file-${i}.txt`, pseudoRandomBytes(200 + (i % 500), i));
    }
    for (let i = 0; i < 3; i += 1)
      await writeFile(home, `media/${i}.bin`, pseudoRandomBytes(1_500_000, 90 + i));

    const first = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "session-success",
      tar: tarOf(home),
    });
    expect(first.fileCount).toBe(2_003);
    expect(first.newBytes).toBe(first.sizeBytes);
    const second = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: first.id,
      reason: "session-success",
      tar: tarOf(home),
    });
    expect(second.newBytes).toBe(0);
    expect(second.newBytes).toBeLessThan(second.sizeBytes * 0.01);

    await writeFile(home, "dir-3/file-3.txt", "changed");
    const third = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: second.id,
      reason: "session-success",
      tar: tarOf(home),
    });
    expect(third.newBytes).toBe("changed".length);
  });

  it("keeps R1, R2, R3 apart: R1 reads back exactly while R2 and R3 stay listed", async () => {
    const home = join(work, "home");
    await writeFile(home, "state.txt", "one");
    await writeFile(home, "only-in-r1.txt", "r1");
    const r1Tree = await snapshot(home);
    const r1 = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });

    await writeFile(home, "state.txt", "two");
    await fs.rm(join(home, "only-in-r1.txt"));
    await writeFile(home, "added-in-r2/file", "r2", 0o755);
    const r2 = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: r1.id,
      reason: "manual",
      tar: tarOf(home),
    });

    await writeFile(home, "state.txt", "three");
    await fs.symlink("state.txt", join(home, "link"));
    const r3Tree = await snapshot(home);
    const r3 = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: r2.id,
      reason: "manual",
      tar: tarOf(home),
    });

    expect(await snapshot(await restore("h", r1.id, "r1"))).toEqual(r1Tree);
    expect(await snapshot(await restore("h", r3.id, "r3"))).toEqual(r3Tree);
    expect((await store.list("h")).map((r) => [r.id, r.parentId])).toEqual([
      [r3.id, r2.id],
      [r2.id, r1.id],
      [r1.id, null],
    ]);
  });

  it("leaves no partial revision when the archive breaks mid-way, and the next write still works", async () => {
    const home = await makeHome("home");
    const before = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    await writeFile(home, "new-content.bin", pseudoRandomBytes(3 * 1024 * 1024, 55));

    const full = tarOf(home).getReader();
    let sent = 0;
    const breaking = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await full.read();
        if (next.done || sent > 4 * 1024 * 1024) {
          await full.cancel();
          controller.error(new Error("export died"));
          return;
        }
        sent += next.value.length;
        controller.enqueue(next.value);
      },
    });
    await expect(
      store.write({ workspaceId: WS, homeKey: "h", parentId: before.id, reason: "stop", tar: breaking }),
    ).rejects.toBeInstanceOf(CheckpointStoreError);

    expect((await store.list("h")).map((r) => r.id)).toEqual([before.id]);
    const restoredBefore = await restore("h", before.id, "before");
    await fs.rm(join(home, "new-content.bin"));
    expect(await snapshot(restoredBefore)).toEqual(await snapshot(home));
    // a leftover temp folder (as a crash would leave) is ignored and then cleaned up
    await fs.mkdir(join(root, "tmp", "w-999999999-deadbeef"), { recursive: true });
    await fs.writeFile(join(root, "tmp", "w-999999999-deadbeef", "o-0"), "junk");
    const after = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: before.id,
      reason: "stop",
      tar: tarOf(home),
    });
    expect(after.newBytes).toBe(0);
    expect(await fs.readdir(join(root, "tmp"))).toEqual([]);
  });

  it("survives kill -9 in the middle of a write: the earlier revision is intact, the interrupted one absent", async () => {
    const home = await makeHome("home");
    const before = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });

    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "testing", "kill-writer.ts"), root, "h", before.id],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((done) =>
      child.once("exit", (_code, signal) => done(signal)),
    );
    try {
      await new Promise<void>((started, failed) => {
        child.stdout.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("writing")) started();
        });
        child.once("exit", () => failed(new Error(`writer exited before writing: ${stderr}`)));
      });
      // some of the revision's objects are sealed in its temp folder by now
      const [writing] = await fs.readdir(join(root, "tmp"));
      expect((await fs.readdir(join(root, "tmp", writing ?? ""))).length).toBeGreaterThan(10);
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
    } finally {
      child.kill("SIGKILL");
    }

    expect((await store.list("h")).map((r) => r.id)).toEqual([before.id]);
    expect(await snapshot(await restore("h", before.id, "restored"))).toEqual(await snapshot(home));
    expect((await fs.readdir(join(root, "tmp"))).length).toBe(1);

    // none of its objects was put in place before all of them were durable
    const objects = await objectCount(root);
    expect((await store.collectGarbage()).removedObjects).toBe(0);
    // the next write cleans up after the dead writer
    const next = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: before.id,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(await fs.readdir(join(root, "tmp"))).toEqual([]);
    expect(await objectCount(root)).toBe(objects);
    expect(await snapshot(await restore("h", next.id, "next"))).toEqual(await snapshot(home));
  });

  it("refuses archives with absolute paths or '..', clearly, and stores nothing", async () => {
    for (const name of ["/etc/passwd", "../escape.txt", "./a/../../escape.txt"]) {
      const archive = pack();
      archive.entry({ name: "./ok.txt" }, "fine");
      archive.entry({ name }, "bad");
      archive.finalize();
      const tar = new ReadableStream<Uint8Array>({
        async start(controller) {
          for await (const chunk of archive) controller.enqueue(new Uint8Array(chunk as Buffer));
          controller.close();
        },
      });
      const attempt = store.write({ workspaceId: WS, homeKey: "h", parentId: null, reason: "manual", tar });
      await expect(attempt).rejects.toMatchObject({ code: "INVALID_ARCHIVE" });
      await expect(attempt).rejects.toThrow(/absolute path|climbs out of the home/);
    }
    expect(await store.list("h")).toEqual([]);
  });

  it("refuses unsafe home keys and revision ids", async () => {
    await expect(store.list("../x")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(store.read("h", "../../etc")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(store.read("h", "20260101T000000000Z-00000000")).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });

  it("garbage-collects only what no kept revision needs, shared objects included", async () => {
    const home = join(work, "home");
    await writeFile(home, "shared.bin", pseudoRandomBytes(100_000, 3));
    await writeFile(home, "r1-only.bin", pseudoRandomBytes(50_000, 4));
    const r1 = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    await fs.rm(join(home, "r1-only.bin"));
    await writeFile(home, "r2-only.bin", pseudoRandomBytes(60_000, 5));
    const r2 = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: r1.id,
      reason: "manual",
      tar: tarOf(home),
    });
    // another home shares content too
    const other = await store.write({
      workspaceId: WS,
      homeKey: "other",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(other.newBytes).toBe(0);
    expect(await objectCount(root)).toBe(3);

    await store.remove("h", [r1.id]);
    expect(await objectCount(root)).toBe(2);
    expect((await store.list("h")).map((r) => r.id)).toEqual([r2.id]);
    expect(await snapshot(await restore("h", r2.id, "r2"))).toEqual(await snapshot(home));

    await store.remove("h", [r2.id]);
    expect(await objectCount(root)).toBe(2);
    await store.remove("other", [other.id]);
    expect(await objectCount(root)).toBe(0);
  });

  it("prunes with the retention policy without touching kept revisions", async () => {
    const home = join(work, "home");
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      await writeFile(home, "counter.txt", String(i));
      ids.push(
        (
          await store.write({
            workspaceId: WS,
            homeKey: "h",
            parentId: ids.at(-1) ?? null,
            reason: "idle",
            tar: tarOf(home),
          })
        ).id,
      );
    }
    const doomed = selectForRemoval(await store.list("h"), { keepLast: 2, keepDailyForDays: 0 }, new Date());
    await store.remove(
      "h",
      doomed.map((r) => r.id),
    );
    expect((await store.list("h")).map((r) => r.id)).toEqual([ids[4], ids[3]]);
    const restored = await restore("h", ids[3] ?? "", "r4");
    expect(await fs.readFile(join(restored, "counter.txt"), "utf8")).toBe("3");
    expect(await objectCount(root)).toBe(2);
  });
});

/** Every file under `dir`, recursively, with its bytes. */
async function filesUnder(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(path, await fs.readFile(path));
  }
  return files;
}

/** The paths a revision's archive lists (its manifest, as a restore sees it). */
async function archivedPaths(tar: ReadableStream<Uint8Array>): Promise<string[]> {
  const parser = extract();
  Readable.fromWeb(tar as NodeReadableStream<Uint8Array>).pipe(parser);
  const names: string[] = [];
  for await (const entry of parser) {
    names.push(entry.header.name.replace(/^\.\//, "").replace(/\/$/, ""));
    entry.resume();
  }
  return names;
}

const KEY_A = "checkpoint-key-a-0123456789abcdefghijklmnop";
const KEY_B = "checkpoint-key-b-0123456789abcdefghijklmnop";
const storeWith = (current: string, previous: string[] = []) =>
  createFileCheckpointStore(root, { sealing: createCheckpointSealing({ current, previous }) });

describe("checkpoints at rest", () => {
  const COOKIE = "sessionid=Zq7cOOKIEvalue4f2a9d";

  it("never has a planted cookie value on disk: objects, manifests and names are sealed", async () => {
    const home = join(work, "home");
    const profile = ".browser-profiles/chromium/Default";
    await writeFile(home, `${profile}/Cookies`, `SQLite format 3\0...${COOKIE}...`);
    // large enough to stream through a temp file
    const big = Buffer.concat([pseudoRandomBytes(3 * 1024 * 1024, 11), Buffer.from(COOKIE)]);
    await writeFile(home, `${profile}/Local Storage/leveldb/000003.log`, big);
    await fs.symlink(`/tmp/${COOKIE}`, join(home, "link-naming-it"));
    const info = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });

    const onDisk = await filesUnder(root);
    expect(onDisk.size).toBeGreaterThan(2);
    for (const [path, bytes] of onDisk) {
      expect(bytes.includes(COOKIE), `${path} holds the cookie`).toBe(false);
      expect(bytes.includes("Local Storage"), `${path} names a profile file`).toBe(false);
    }
    // and it all comes back
    expect(await snapshot(await restore("h", info.id, "restored"))).toEqual(await snapshot(home));
  });

  it("gives equal content in two workspaces different addresses, and stores it once within one", async () => {
    const home = join(work, "home");
    await writeFile(home, "same.bin", pseudoRandomBytes(200_000, 21));
    const objectNames = async () => new Set(await fs.readdir(join(root, "objects"), { recursive: true }));
    const inA = await store.write({
      workspaceId: "ws-a",
      homeKey: "a",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    const afterA = await objectNames();
    const inB = await store.write({
      workspaceId: "ws-b",
      homeKey: "b",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(inB.newBytes).toBe(inA.sizeBytes);
    const added = [...(await objectNames())].filter((name) => !afterA.has(name));
    expect(added.filter((name) => name.includes("/"))).toHaveLength(1);
    expect(inB.sha256).not.toBe(inA.sha256);
    // another computer of workspace A shares A's object
    const alsoA = await store.write({
      workspaceId: "ws-a",
      homeKey: "a2",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(alsoA.newBytes).toBe(0);
  });

  it("restores a revision sealed under key A after rotating to key B, and says which key is missing without it", async () => {
    const home = join(work, "home");
    await writeFile(home, "notes.txt", "written under A\n");
    await writeFile(home, "big.bin", pseudoRandomBytes(2 * 1024 * 1024, 31));
    const underA = await storeWith(KEY_A).write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });

    const rotated = storeWith(KEY_B, [KEY_A]);
    expect((await rotated.list("h")).map((r) => r.id)).toEqual([underA.id]);
    const dir = join(work, "rotated");
    await untarInto(await rotated.read("h", underA.id), dir);
    expect(await snapshot(dir)).toEqual(await snapshot(home));
    // new writes are sealed and addressed under B: nothing of A's is reused
    const underB = await rotated.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: underA.id,
      reason: "manual",
      tar: tarOf(home),
    });
    expect(underB.newBytes).toBe(underB.sizeBytes);

    // A retired: B's revision still reads, A's is refused with the reason
    const retired = storeWith(KEY_B);
    await untarInto(await retired.read("h", underB.id), join(work, "b-only"));
    expect(await snapshot(join(work, "b-only"))).toEqual(await snapshot(home));
    await expect(retired.read("h", underA.id)).rejects.toThrow(
      /sealed with key id [0-9a-f]{12}.*ENCRYPTION_KEYS_PREVIOUS/,
    );
  });

  it("leaves Chromium's caches out of a revision and keeps the rest of the profile", async () => {
    const home = join(work, "home");
    const data = ".browser-profiles/chromium";
    const kept = [
      `${data}/Local State`,
      `${data}/Default/Cookies`,
      `${data}/Default/Preferences`,
      `${data}/Default/Local Storage/leveldb/000003.log`,
      `${data}/Default/IndexedDB/https_example.org_0.indexeddb.leveldb/LOG`,
      `${data}/Default/Service Worker/Database/000001.log`,
      `${data}/Profile 1/Cookies`,
      ".config/chromium/Default/Cookies",
      // a folder of the user's that happens to be called Cache
      "work/Cache/keep.txt",
    ];
    const caches = [
      `${data}/Default/Cache/Cache_Data/data_0`,
      `${data}/Default/Code Cache/js/index`,
      `${data}/Default/GPUCache/data_1`,
      `${data}/Default/DawnCache/data_0`,
      `${data}/Default/DawnGraphiteCache/data_0`,
      `${data}/Default/Service Worker/CacheStorage/abc/index`,
      `${data}/Default/Service Worker/ScriptCache/index`,
      `${data}/Profile 1/Cache/Cache_Data/index`,
      `${data}/GrShaderCache/data_0`,
      `${data}/GraphiteDawnCache/data_0`,
      `${data}/ShaderCache/data_0`,
      `${data}/component_crx_cache/abc.crx`,
      ".config/chromium/Default/Code Cache/wasm/index",
      ".cache/chromium/Default/Cache/Cache_Data/data_0",
    ];
    for (const path of [...kept, ...caches]) await writeFile(home, path, `content of ${path}`);
    const info = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });

    const listed = await archivedPaths(await store.read("h", info.id));
    for (const path of kept) expect(listed).toContain(path);
    for (const cache of [
      "Cache",
      "Code Cache",
      "GPUCache",
      "DawnCache",
      "DawnGraphiteCache",
      "CacheStorage",
      "ScriptCache",
      "GrShaderCache",
      "GraphiteDawnCache",
      "ShaderCache",
      "component_crx_cache",
    ]) {
      expect(listed.filter((path) => path.startsWith(data) && path.split("/").includes(cache))).toEqual([]);
    }
    expect(listed.filter((path) => path.startsWith(".cache/chromium"))).toEqual([]);
    expect(listed).not.toContain(".config/chromium/Default/Code Cache");
    expect(info.fileCount).toBe(kept.length);

    const restored = await restore("h", info.id, "restored");
    for (const path of kept)
      expect(await fs.readFile(join(restored, path), "utf8")).toBe(`content of ${path}`);
    for (const path of caches) await expect(fs.access(join(restored, path))).rejects.toThrow();
  });

  it("refuses a tampered object or manifest clearly, before handing on any of its bytes", async () => {
    const home = join(work, "home");
    const marker = "ORIGINAL-CONTENT-";
    await writeFile(home, "doc.txt", marker.repeat(100));
    const info = await store.write({
      workspaceId: WS,
      homeKey: "h",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    const files = [...(await filesUnder(join(root, "objects"))).keys()];
    expect(files).toHaveLength(1);
    const object = files[0] ?? "";
    const original = await fs.readFile(object);
    // an attacker on the disk swaps one letter of what is there
    const altered = Buffer.from(original);
    const at = altered.length - 40;
    altered[at] = (altered[at] ?? 0) ^ 0x20;
    await fs.writeFile(object, altered);

    const received: Buffer[] = [];
    const reading = (async () => {
      for await (const chunk of (await store.read("h", info.id)) as unknown as AsyncIterable<Uint8Array>)
        received.push(Buffer.from(chunk));
    })();
    await expect(reading).rejects.toMatchObject({ code: "CORRUPT" });
    await expect(reading).rejects.toThrow(/content of doc\.txt .*failed authentication/);
    // no byte of the file's content was handed to the restore
    expect(Buffer.concat(received).includes("ORIGINAL")).toBe(false);
    expect(Buffer.concat(received).includes("original")).toBe(false);

    // a truncated object fails the same way
    await fs.writeFile(object, original.subarray(0, original.length - 1));
    await expect(collect(await store.read("h", info.id))).rejects.toThrow(/failed authentication/);
    await fs.writeFile(object, original);
    expect((await collect(await store.read("h", info.id))).includes(marker)).toBe(true);

    // a large object cut at a chunk boundary (whole chunks gone) fails as well
    await writeFile(home, "large.bin", pseudoRandomBytes(1024 * 1024, 41));
    const large = await store.write({
      workspaceId: WS,
      homeKey: "large",
      parentId: null,
      reason: "manual",
      tar: tarOf(home),
    });
    const sizes = await Promise.all(
      [...(await filesUnder(join(root, "objects"))).keys()].map(async (path) => ({
        path,
        size: (await fs.stat(path)).size,
      })),
    );
    const largest = sizes.sort((a, b) => b.size - a.size)[0]?.path ?? "";
    const whole = await fs.readFile(largest);
    await fs.writeFile(largest, whole.subarray(0, whole.length - (64 * 1024 + 16)));
    await expect(collect(await store.read("large", large.id))).rejects.toThrow(
      /large\.bin .*failed authentication/,
    );
    await fs.writeFile(largest, whole);

    const manifest = join(root, "homes", "h", "revisions", `${info.id}.json`);
    const sealedManifest = await fs.readFile(manifest);
    sealedManifest[sealedManifest.length - 1] = (sealedManifest.at(-1) ?? 0) ^ 1;
    await fs.writeFile(manifest, sealedManifest);
    await expect(store.read("h", info.id)).rejects.toThrow(/checkpoint manifest h\/.* failed authentication/);
  });
});
