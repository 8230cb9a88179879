import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pack } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileCheckpointStore, type FileCheckpointStore } from "./file-store.ts";
import { selectForRemoval } from "./retention.ts";
import {
  collect,
  objectCount,
  pseudoRandomBytes,
  snapshot,
  tarOf,
  untarInto,
  writeFile,
} from "./test-support.ts";
import { CheckpointStoreError } from "./types.ts";

const here = dirname(fileURLToPath(import.meta.url));
let work: string;
let root: string;
let store: FileCheckpointStore;

beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), "cubicle-checkpoints-"));
  root = join(work, "store");
  store = createFileCheckpointStore(root, { gcGraceMs: 0 });
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
    const info = await store.write({ homeKey: "bot-1", parentId: null, reason: "manual", tar: tarOf(home) });
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
    const first = await store.write({ homeKey: "h", parentId: null, reason: "idle", tar: tarOf(home) });
    const second = await store.write({ homeKey: "h", parentId: first.id, reason: "stop", tar: tarOf(home) });
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
      homeKey: "h",
      parentId: null,
      reason: "session-success",
      tar: tarOf(home),
    });
    expect(first.fileCount).toBe(2_003);
    expect(first.newBytes).toBe(first.sizeBytes);
    const second = await store.write({
      homeKey: "h",
      parentId: first.id,
      reason: "session-success",
      tar: tarOf(home),
    });
    expect(second.newBytes).toBe(0);
    expect(second.newBytes).toBeLessThan(second.sizeBytes * 0.01);

    await writeFile(home, "dir-3/file-3.txt", "changed");
    const third = await store.write({
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
    const r1 = await store.write({ homeKey: "h", parentId: null, reason: "manual", tar: tarOf(home) });

    await writeFile(home, "state.txt", "two");
    await fs.rm(join(home, "only-in-r1.txt"));
    await writeFile(home, "added-in-r2/file", "r2", 0o755);
    const r2 = await store.write({ homeKey: "h", parentId: r1.id, reason: "manual", tar: tarOf(home) });

    await writeFile(home, "state.txt", "three");
    await fs.symlink("state.txt", join(home, "link"));
    const r3Tree = await snapshot(home);
    const r3 = await store.write({ homeKey: "h", parentId: r2.id, reason: "manual", tar: tarOf(home) });

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
    const before = await store.write({ homeKey: "h", parentId: null, reason: "manual", tar: tarOf(home) });
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
      store.write({ homeKey: "h", parentId: before.id, reason: "stop", tar: breaking }),
    ).rejects.toBeInstanceOf(CheckpointStoreError);

    expect((await store.list("h")).map((r) => r.id)).toEqual([before.id]);
    const restoredBefore = await restore("h", before.id, "before");
    await fs.rm(join(home, "new-content.bin"));
    expect(await snapshot(restoredBefore)).toEqual(await snapshot(home));
    // a leftover temp folder (as a crash would leave) is ignored and then cleaned up
    await fs.mkdir(join(root, "tmp", "w-999999999-deadbeef"), { recursive: true });
    await fs.writeFile(join(root, "tmp", "w-999999999-deadbeef", "o-0"), "junk");
    const after = await store.write({ homeKey: "h", parentId: before.id, reason: "stop", tar: tarOf(home) });
    expect(after.newBytes).toBe(0);
    expect(await fs.readdir(join(root, "tmp"))).toEqual([]);
  });

  it("survives kill -9 in the middle of a write: the earlier revision is intact, the interrupted one absent", async () => {
    const home = await makeHome("home");
    const before = await store.write({ homeKey: "h", parentId: null, reason: "manual", tar: tarOf(home) });

    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "kill-writer.ts"), root, "h", before.id],
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
      // some of the revision's objects are in place by now
      expect(await objectCount(root)).toBeGreaterThan(10);
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
    } finally {
      child.kill("SIGKILL");
    }

    expect((await store.list("h")).map((r) => r.id)).toEqual([before.id]);
    expect(await snapshot(await restore("h", before.id, "restored"))).toEqual(await snapshot(home));
    expect((await fs.readdir(join(root, "tmp"))).length).toBe(1);

    // the next write cleans up after the dead writer, and GC removes its orphaned objects
    const next = await store.write({ homeKey: "h", parentId: before.id, reason: "manual", tar: tarOf(home) });
    expect(await fs.readdir(join(root, "tmp"))).toEqual([]);
    const collected = await store.collectGarbage();
    expect(collected.removedObjects).toBeGreaterThan(10);
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
      const attempt = store.write({ homeKey: "h", parentId: null, reason: "manual", tar });
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
    const r1 = await store.write({ homeKey: "h", parentId: null, reason: "manual", tar: tarOf(home) });
    await fs.rm(join(home, "r1-only.bin"));
    await writeFile(home, "r2-only.bin", pseudoRandomBytes(60_000, 5));
    const r2 = await store.write({ homeKey: "h", parentId: r1.id, reason: "manual", tar: tarOf(home) });
    // another home shares content too
    const other = await store.write({ homeKey: "other", parentId: null, reason: "manual", tar: tarOf(home) });
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

  it("does not collect young unreferenced objects within the grace period", async () => {
    const graceful = createFileCheckpointStore(root, { gcGraceMs: 60_000 });
    const home = join(work, "home");
    await writeFile(home, "f.bin", pseudoRandomBytes(10_000, 9));
    const r1 = await graceful.write({ homeKey: "h", parentId: null, reason: "manual", tar: tarOf(home) });
    await graceful.remove("h", [r1.id]);
    expect(await objectCount(root)).toBe(1);
  });

  it("prunes with the retention policy without touching kept revisions", async () => {
    const home = join(work, "home");
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      await writeFile(home, "counter.txt", String(i));
      ids.push(
        (await store.write({ homeKey: "h", parentId: ids.at(-1) ?? null, reason: "idle", tar: tarOf(home) }))
          .id,
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
