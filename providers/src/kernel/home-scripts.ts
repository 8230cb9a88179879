import { readFileSync } from "node:fs";
import type { FileEntry } from "../contract/index.ts";
import { byName } from "./by-name.ts";

/**
 * Programs handed to a computer at every run (never baked into an image), so that computers made
 * from older images and vendors' sandboxes run the same confined file operations and home swap.
 * `perl -e HOME_FILES_SCRIPT -- <home> <op> <path> [args]` (home-files.pl says how it walks);
 * `sh -c HOME_SWAP_SCRIPT home-swap <home> <stage> <old>` (home-swap.sh).
 */
export const HOME_FILES_SCRIPT = readFileSync(new URL("./home-files.pl", import.meta.url), "utf8");
export const HOME_SWAP_SCRIPT = readFileSync(new URL("./home-swap.sh", import.meta.url), "utf8");

/**
 * The entries home-files.pl lists after its `ok` line (name, kind, size, octal mode and mtime,
 * each field NUL-terminated), sorted by name; paths are `relative` joined with the name.
 */
export function parseHomeListing(listing: string, relative: string): FileEntry[] {
  const fields = listing.length === 0 ? [] : listing.split("\0");
  // NUL terminates every field, so the last split part is empty
  if (fields.at(-1) === "") fields.pop();
  const entries: FileEntry[] = [];
  for (let i = 0; i + 4 < fields.length; i += 5) {
    const [name = "", kind, size, mode, mtime] = fields.slice(i, i + 5);
    const type = kind === "l" ? "symlink" : kind === "d" ? "directory" : "file";
    const seconds = Number(mtime);
    entries.push({
      name,
      path: relative ? `${relative}/${name}` : name,
      type,
      size: Number(size) || 0,
      executable: type === "file" && (Number.parseInt(mode ?? "0", 8) & 0o111) !== 0,
      modifiedAt: new Date(Number.isFinite(seconds) ? seconds * 1000 : 0).toISOString(),
    });
  }
  return entries.sort(byName);
}
