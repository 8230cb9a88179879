import type { HomeListing } from "@cubicle/providers/contract";
import { excludedFromRevisions } from "./excluded.ts";
import { entryPath, type ManifestEntry, ROOT_PATH } from "./manifest.ts";

/**
 * A file changed this close before the listing began may be changed again within the same tick
 * of the filesystem's clock (a jiffy, or a whole second on coarse filesystems) after it is read,
 * keeping its stamp: its stamp is not recorded, so the next checkpoint reads it again (git's
 * "racily clean" files).
 */
const RACY_SECONDS = 2;

type FileEntry = Extract<ManifestEntry, { type: "file" }>;

export interface ReadPlan {
  /**
   * Entries known without reading anything: folders and links as listed, and files of the parent
   * revision whose stamp is unchanged, kept as they are.
   */
  known: ManifestEntry[];
  /** What must be read: changed and new files, and anything neither file, folder nor link. */
  wanted: string[];
  /** The stamps of the wanted files that may be recorded once they are read. */
  stamped: Map<string, string>;
}

/**
 * Which entries of a listed home must be read, given the parent revision's entries. Only files
 * are ever reused, and only on an equal stamp recorded from an earlier listing; a listed path the
 * read then does not return (removed meanwhile) is simply not in the revision, and a path the
 * listing lacks is gone, so deletions and renames show.
 */
export function planReads(listing: HomeListing, parent: readonly ManifestEntry[]): ReadPlan {
  const before = new Map<string, FileEntry>();
  for (const entry of parent)
    if (entry.type === "file" && entry.stamp !== undefined) before.set(entry.path, entry);
  const racyFrom = listing.listedAt - RACY_SECONDS;
  const plan: ReadPlan = { known: [], wanted: [], stamped: new Map() };
  for (const item of listing.entries) {
    const path = entryPath(item.path);
    if (excludedFromRevisions(path)) continue;
    // whole seconds, as a tar header has them
    const mtime = Math.floor(item.modifiedAt);
    const mode = item.mode & 0o7777;
    if (item.type === "directory") {
      plan.known.push({ path, type: "directory", mode, mtime });
    } else if (item.type === "symlink" && path !== ROOT_PATH) {
      plan.known.push({ path, type: "symlink", mode, mtime, target: item.target ?? "" });
    } else if (item.type !== "file") {
      plan.wanted.push(path);
    } else {
      const stamp = item.changedAt < racyFrom ? item.stamp : undefined;
      const kept = before.get(path);
      if (stamp !== undefined && kept?.stamp === stamp) {
        plan.known.push(kept);
      } else {
        plan.wanted.push(path);
        if (stamp !== undefined) plan.stamped.set(path, stamp);
      }
    }
  }
  return plan;
}
