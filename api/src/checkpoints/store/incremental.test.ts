import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileCheckpointStore, type FileCheckpointStore } from "./file-store.ts";
import { createCheckpointSealing } from "./sealing.ts";
import {
  changesOf,
  type ListedHome,
  pseudoRandomBytes,
  snapshot,
  TEST_ENCRYPTION_KEYS,
  untarInto,
  writeFile,
} from "./testing/homes.ts";
import type { RevisionInfo } from "./types.ts";

/** An hour ago, in whole seconds. */
const OLD = Math.floor(Date.now() / 1000) - 3_600;
let work: string;
let store: FileCheckpointStore;

beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), "cubicle-incremental-"));
  store = createFileCheckpointStore(join(work, "store"), {
    sealing: createCheckpointSealing(TEST_ENCRYPTION_KEYS),
  });
});

afterEach(async () => {
  await fs.rm(work, { recursive: true, force: true });
});

/**
 * A home whose files were last changed more than the store's racy margin ago, so that their
 * stamps are recorded and an unchanged one is reused: without the wait every file would be read
 * again each time, and no test here could see a wrong reuse.
 */
async function settledHome(): Promise<string> {
  const home = join(work, "home");
  await writeFile(home, "notes.txt", "hello\n");
  await writeFile(home, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755);
  await writeFile(home, "data/one.bin", pseudoRandomBytes(300_000, 1));
  await writeFile(home, "data/two.bin", pseudoRandomBytes(2_000_000, 2));
  await writeFile(home, "data/same-size.txt", "AAAAAAAA");
  await writeFile(home, "old/name.txt", "to be renamed");
  await writeFile(home, "doomed.txt", "to be deleted");
  await fs.symlink("notes.txt", join(home, "link"));
  await fs.mkdir(join(home, "empty"));
  // whole seconds, so that setting them again restores them to the nanosecond
  for (const path of ["data/same-size.txt", "data/two.bin"]) await fs.utimes(join(home, path), OLD, OLD);
  await pastRacyMargin();
  return home;
}

/** Waits out the store's racy margin, within which a changed file is read again whatever its stamp. */
const pastRacyMargin = () => new Promise((done) => setTimeout(done, 2_200));

async function checkpoint(changes: ListedHome, parent: RevisionInfo | null): Promise<RevisionInfo> {
  return store.write({
    homeKey: "h",
    workspaceId: "ws",
    parentId: parent?.id ?? null,
    reason: "manual",
    changes,
  });
}

async function restored(revision: RevisionInfo, name: string): Promise<string> {
  const dir = join(work, name);
  await untarInto(await store.read("h", revision.id), dir);
  return dir;
}

const filesAsked = async (home: string, changes: ListedHome) => {
  const asked = changes.asked.flat();
  const files: string[] = [];
  for (const path of asked)
    if ((await fs.lstat(join(home, path)).catch(() => null))?.isFile()) files.push(path);
  return files.sort();
};

describe("incremental checkpoints (a listed home, only what may have changed read)", () => {
  it("reads every file the first time and none of an unchanged home the next, with the same revision", async () => {
    const home = await settledHome();
    const first = changesOf(home);
    const r1 = await checkpoint(first, null);
    expect(await filesAsked(home, first)).toHaveLength(7);

    const second = changesOf(home);
    const r2 = await checkpoint(second, r1);
    // folders and links come from the listing: nothing is read at all
    expect(second.asked).toEqual([]);
    expect(r2.newBytes).toBe(0);
    expect(r2.sha256).toBe(r1.sha256);
    expect(await snapshot(await restored(r2, "r2"))).toEqual(await snapshot(home));
  });

  it("reads again a file rewritten in place with its size and old times restored (touch -d, cp -p)", async () => {
    const home = await settledHome();
    const r1 = await checkpoint(changesOf(home), null);
    const path = join(home, "data/same-size.txt");
    const before = await fs.stat(path, { bigint: true });
    await fs.writeFile(path, "BBBBBBBB");
    await fs.utimes(path, OLD, OLD);
    const after = await fs.stat(path, { bigint: true });
    // all but the change time as they were
    expect([after.ino, after.size, after.mtimeNs, after.mode]).toEqual([
      before.ino,
      before.size,
      before.mtimeNs,
      before.mode,
    ]);
    expect(after.ctimeNs).not.toBe(before.ctimeNs);
    await pastRacyMargin();

    const changes = changesOf(home);
    const r2 = await checkpoint(changes, r1);
    expect(await filesAsked(home, changes)).toEqual(["data/same-size.txt"]);
    expect(await fs.readFile(join(await restored(r2, "r2"), "data/same-size.txt"), "utf8")).toBe("BBBBBBBB");
  });

  it("sees deletions, renames, mode changes, a retargeted link and a new empty folder", async () => {
    const home = await settledHome();
    const r1 = await checkpoint(changesOf(home), null);
    await fs.rm(join(home, "doomed.txt"));
    await fs.rename(join(home, "old"), join(home, "new"));
    await fs.chmod(join(home, "notes.txt"), 0o600);
    await fs.rm(join(home, "link"));
    await fs.symlink("bin/run.sh", join(home, "link"));
    await fs.mkdir(join(home, "empty/inner"));
    await fs.rename(join(home, "data/one.bin"), join(home, "data/uno.bin"));

    const r2 = await checkpoint(changesOf(home), r1);
    const tree = await snapshot(await restored(r2, "r2"));
    expect(tree).toEqual(await snapshot(home));
    expect(tree.has("doomed.txt")).toBe(false);
    expect(tree.has("old/name.txt")).toBe(false);
    expect(tree.get("new/name.txt")?.type).toBe("file");
    expect(tree.get("notes.txt")?.mode).toBe(0o600);
    expect(tree.get("link")?.target).toBe("bin/run.sh");
  });

  it("never keeps a stale content for a file written while it was exported", async () => {
    const home = await settledHome();
    const path = join(home, "data/two.bin");
    const old = await fs.readFile(path);
    // written once tar has read it: the revision holds the old content under the stamp listed
    // before, which the write has changed
    const during = changesOf(home, {
      afterRead: true,
      meanwhile: async () => {
        await fs.writeFile(path, pseudoRandomBytes(2_000_000, 3));
        await fs.utimes(path, OLD, OLD);
      },
    });
    const r1 = await checkpoint(during, null);
    expect(await fs.readFile(join(await restored(r1, "r1"), "data/two.bin"))).toEqual(old);

    await pastRacyMargin();
    const next = changesOf(home);
    const r2 = await checkpoint(next, r1);
    expect(await filesAsked(home, next)).toEqual(["data/two.bin"]);
    expect(await snapshot(await restored(r2, "r2"))).toEqual(await snapshot(home));
  });

  it("keeps nothing of a file removed between the listing and the read", async () => {
    const home = await settledHome();
    const r1 = await checkpoint(changesOf(home), null);
    await fs.writeFile(join(home, "notes.txt"), "changed\n");
    const changes = changesOf(home, { meanwhile: () => fs.rm(join(home, "notes.txt")) });
    const r2 = await checkpoint(changes, r1);
    expect(changes.asked.flat()).toContain("notes.txt");
    const tree = await snapshot(await restored(r2, "r2"));
    expect(tree.has("notes.txt")).toBe(false);
    expect(tree).toEqual(await snapshot(home));
  });
});
