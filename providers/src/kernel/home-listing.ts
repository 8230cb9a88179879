import type { HomeListing, HomeListingEntry } from "../contract/index.ts";

/**
 * `find` arguments that list the home at `home` for `listHome`. Each entry is three NUL-ended
 * fields: `<type> <device>:<inode>:<ctime>:<mtime>:<size>:<mode> <ctime> <mtime> <mode>` (times to
 * the nanosecond, the mode in octal), its path, and a link's target (empty for anything else).
 * An entry removed while its folder is read is simply not listed (-ignore_readdir_race): a home in
 * use has files coming and going.
 */
export function stampedListingFindArgs(home: string): string[] {
  return [home, "-ignore_readdir_race", "-printf", "%y %D:%i:%C@:%T@:%s:%m %C@ %T@ %m\\0%P\\0%l\\0"];
}

const TYPES: Record<string, HomeListingEntry["type"]> = { f: "file", d: "directory", l: "symlink" };

/** `find`'s output (stampedListingFindArgs) as a listing begun at `listedAt` (machine seconds). */
export function parseStampedListing(output: Buffer, listedAt: number): HomeListing {
  const entries: HomeListingEntry[] = [];
  const fields = output.toString("utf8").split("\0");
  for (let index = 0; index + 2 < fields.length; index += 3) {
    const head = (fields[index] as string).split(" ");
    const [type, stamp, changed, modified, mode] = head;
    const changedAt = Number(changed);
    const modifiedAt = Number(modified);
    const bits = Number.parseInt(mode ?? "", 8);
    if (
      head.length !== 5 ||
      !stamp ||
      !Number.isFinite(changedAt) ||
      !Number.isFinite(modifiedAt) ||
      Number.isNaN(bits)
    )
      throw new Error(`unreadable home listing entry ${JSON.stringify(fields[index])}`);
    const path = fields[index + 1] as string;
    const kind = TYPES[type as string] ?? "other";
    entries.push({
      path: path === "" ? "." : path,
      type: kind,
      stamp,
      changedAt,
      modifiedAt,
      mode: bits,
      ...(kind === "symlink" ? { target: fields[index + 2] as string } : {}),
    });
  }
  return { listedAt, entries };
}

/**
 * GNU tar arguments (after `-C <home>` and before `-cf`) that archive the entries named on its
 * standard input (`pathsInput`) and nothing under them; one gone since it was listed is skipped
 * with a warning instead of failing the export.
 */
export const PATHS_TAR_ARGS = [
  "--no-recursion",
  "--null",
  "--verbatim-files-from",
  "--ignore-failed-read",
  "-T",
  "-",
];

/** Home-relative paths as `PATHS_TAR_ARGS` reads them, named as a whole home's export names them. */
export function pathsInput(paths: readonly string[]): Buffer {
  return Buffer.from(paths.map((path) => (path === "." ? ".\0" : `./${path}\0`)).join(""), "utf8");
}

/**
 * Whether tar's complaints name an entry it could not read (and so left out): an export of named
 * paths tolerates entries gone since the listing, not unreadable ones, which a whole export fails on.
 */
export function tarLeftOutUnreadable(stderr: string): boolean {
  return /Permission denied/.test(stderr);
}
