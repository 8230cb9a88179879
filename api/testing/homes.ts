import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { snapshot, type TreeEntry, untarInto } from "../src/checkpoints/store/testing/homes.ts";

// The store's own listing of a home, for benchmarks that checkpoint synthetic homes.
export { changesOf } from "../src/checkpoints/store/testing/homes.ts";

/** Every path of a home tar (files by content hash), to compare two homes entry for entry. */
export async function treeOf(tar: ReadableStream<Uint8Array>): Promise<Map<string, TreeEntry>> {
  const dir = await mkdtemp(join(tmpdir(), "cubicle-home-tree-"));
  try {
    await untarInto(tar, dir);
    const tree = await snapshot(dir);
    // The root's own mode depends on where it was unpacked, not on the home.
    tree.delete(".");
    return tree;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Just the files: path → sha256. */
export function filesOf(tree: Map<string, TreeEntry>): Record<string, string> {
  return Object.fromEntries(
    [...tree].flatMap(([path, entry]) => (entry.type === "file" ? [[path, entry.sha256 ?? ""]] : [])),
  );
}
