import { posix } from "node:path";

/**
 * filesystem.EntryInfo from `find -printf`. The fields are NUL-separated (any byte but NUL may be
 * in a path): type, octal mode, size, owner, group, mtime (seconds.fraction), link target, path.
 */
export const FIND_FORMAT = "%y\\0%m\\0%s\\0%u\\0%g\\0%T@\\0%l\\0%p\\0";
const FIELDS = 8;

export type FileType =
  | "FILE_TYPE_FILE"
  | "FILE_TYPE_DIRECTORY"
  | "FILE_TYPE_SYMLINK"
  | "FILE_TYPE_UNSPECIFIED";

export interface EntryInfo {
  name: string;
  type: FileType;
  path: string;
  /** int64, which protobuf's JSON writes as a string. */
  size: string;
  mode: number;
  permissions: string;
  owner: string;
  group: string;
  modifiedTime: string;
  symlinkTarget?: string;
}

const TYPES: Record<string, FileType> = {
  f: "FILE_TYPE_FILE",
  d: "FILE_TYPE_DIRECTORY",
  l: "FILE_TYPE_SYMLINK",
};

/** Go's type letters in FileMode.String(), for find's %y. */
const GO_TYPE_LETTERS: Record<string, string> = { d: "d", l: "L", p: "p", s: "S", b: "D", c: "Dc" };

/** The mode as Go's os.FileMode.String() writes it (envd's `permissions`), e.g. "drwxr-xr-x", "Lrwxrwxrwx". */
function goModeString(findType: string, mode: number): string {
  let letters = GO_TYPE_LETTERS[findType] ?? "";
  if (mode & 0o4000) letters += "u";
  if (mode & 0o2000) letters += "g";
  if (mode & 0o1000) letters += "t";
  // Go writes type and special letters in the order "dalTLDpSugct?"
  const order = "dalTLDpSugct?";
  letters = [...letters].sort((a, b) => order.indexOf(a) - order.indexOf(b)).join("") || "-";
  const rwx = "rwxrwxrwx";
  let bits = "";
  for (let i = 0; i < 9; i++) bits += mode & (1 << (8 - i)) ? rwx[i] : "-";
  return letters + bits;
}

/** find's "%T@" (seconds with up to ten decimals) as RFC 3339 with nanoseconds, protobuf's Timestamp JSON. */
function rfc3339(secondsDotFraction: string): string {
  const [whole = "0", fraction = ""] = secondsDotFraction.split(".");
  const date = new Date(Number(whole) * 1000).toISOString().replace(/\.\d{3}Z$/, "");
  return `${date}.${fraction.padEnd(9, "0").slice(0, 9)}Z`;
}

/** The entries `find -printf FIND_FORMAT` printed. */
export function parseEntries(output: Buffer): EntryInfo[] {
  const fields = output.toString("utf8").split("\0");
  const entries: EntryInfo[] = [];
  for (let i = 0; i + FIELDS <= fields.length; i += FIELDS) {
    const [type = "", mode = "0", size = "0", owner = "", group = "", mtime = "0", target = "", path = ""] =
      fields.slice(i, i + FIELDS);
    const octal = Number.parseInt(mode, 8);
    entries.push({
      name: path === "/" ? "/" : posix.basename(path),
      type: TYPES[type] ?? "FILE_TYPE_UNSPECIFIED",
      path,
      size,
      mode: octal & 0o777,
      permissions: goModeString(type, octal),
      owner,
      group,
      modifiedTime: rfc3339(mtime),
      ...(type === "l" ? { symlinkTarget: target } : {}),
    });
  }
  return entries;
}
