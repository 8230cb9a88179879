import { createHash } from "node:crypto";
import {
  CHECKPOINT_REASONS,
  type CheckpointReason,
  CheckpointStoreError,
  type RevisionInfo,
} from "./types.ts";

/** The home itself, when the archive lists it (GNU tar's "./"). */
export const ROOT_PATH = ".";

export type ManifestEntry =
  | { path: string; type: "directory"; mode: number; mtime: number }
  | {
      path: string;
      type: "file";
      mode: number;
      mtime: number;
      size: number;
      address: string;
      /**
       * The file's stamp when it was listed before being read (HomeListingEntry), when it was
       * listed and not changed in the moments before: a later listing with the same stamp reuses
       * this entry unread. Not part of the revision's checksum, which is about contents.
       */
      stamp?: string;
    }
  | { path: string; type: "symlink"; mode: number; mtime: number; target: string };

/** A revision on disk: its description and its sorted entries. */
export interface Manifest {
  /** 2: sealed at rest, with per-workspace addresses (1 was plaintext with sha256 names). */
  version: 2;
  id: string;
  /** Whose key addresses the contents: needed to check each one's address when it is read. */
  workspaceId: string;
  homeKey: string;
  parentId: string | null;
  reason: CheckpointReason;
  createdAt: string;
  sizeBytes: number;
  fileCount: number;
  newBytes: number;
  sha256: string;
  entries: ManifestEntry[];
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const ADDRESS_HEX = /^[0-9a-f]{64}$/;

/** Home keys and revision ids become file names: only plain, safe names are allowed. */
export function checkName(what: string, value: string): string {
  if (typeof value !== "string" || !SAFE_NAME.test(value)) {
    throw new CheckpointStoreError(
      "INVALID_ARGUMENT",
      `${what} ${JSON.stringify(value)} is not a valid name (letters, digits, ".", "_", "-"; at most 200)`,
    );
  }
  return value;
}

/** An object's name: its content's HMAC-SHA256 address, in hex. */
export function isAddress(value: string): boolean {
  return ADDRESS_HEX.test(value);
}

/**
 * An archive entry's name as a home-relative path ("." is the home itself). Absolute paths and
 * ".." are refused: a revision never names anything outside its home.
 */
export function entryPath(name: string): string {
  if (name.startsWith("/")) {
    throw new CheckpointStoreError(
      "INVALID_ARCHIVE",
      `archive entry ${JSON.stringify(name)} has an absolute path`,
    );
  }
  if (name.includes("\0")) {
    throw new CheckpointStoreError(
      "INVALID_ARCHIVE",
      `archive entry ${JSON.stringify(name)} has a NUL in its path`,
    );
  }
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) {
    throw new CheckpointStoreError(
      "INVALID_ARCHIVE",
      `archive entry ${JSON.stringify(name)} climbs out of the home with ".."`,
    );
  }
  return parts.length === 0 ? ROOT_PATH : parts.join("/");
}

/** Manifest order: the home first, then by path (code units), so a folder precedes its contents. */
export function comparePaths(a: string, b: string): number {
  if (a === b) return 0;
  if (a === ROOT_PATH) return -1;
  if (b === ROOT_PATH) return 1;
  return a < b ? -1 : 1;
}

/** The checksum of a revision: sha256 of its entries' canonical JSON. */
export function entriesSha256(entries: readonly ManifestEntry[]): string {
  const hash = createHash("sha256");
  for (const entry of entries) hash.update(`${canonicalEntry(entry)}\n`);
  return hash.digest("hex");
}

function canonicalEntry(entry: ManifestEntry): string {
  switch (entry.type) {
    case "directory":
      return JSON.stringify([entry.path, entry.type, entry.mode, entry.mtime]);
    case "file":
      return JSON.stringify([entry.path, entry.type, entry.mode, entry.mtime, entry.size, entry.address]);
    case "symlink":
      return JSON.stringify([entry.path, entry.type, entry.mode, entry.mtime, entry.target]);
  }
}

export function revisionInfo(manifest: Manifest): RevisionInfo {
  return {
    id: manifest.id,
    homeKey: manifest.homeKey,
    parentId: manifest.parentId,
    reason: manifest.reason,
    sizeBytes: manifest.sizeBytes,
    fileCount: manifest.fileCount,
    sha256: manifest.sha256,
    createdAt: new Date(manifest.createdAt),
    newBytes: manifest.newBytes,
  };
}

const corrupt = (where: string, what: string) =>
  new CheckpointStoreError("CORRUPT", `checkpoint manifest ${where} is damaged: ${what}`);

/** Parses a manifest file's text, checking its shape and its checksum. */
export function parseManifest(text: string, where: string): Manifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointStoreError("CORRUPT", `checkpoint manifest ${where} is not JSON`, { cause: error });
  }
  const m = value as Partial<Manifest> | null;
  if (!m || typeof m !== "object" || m.version !== 2) throw corrupt(where, "unknown version");
  if (typeof m.id !== "string" || typeof m.homeKey !== "string" || typeof m.workspaceId !== "string")
    throw corrupt(where, "no id");
  if (!CHECKPOINT_REASONS.includes(m.reason as CheckpointReason)) throw corrupt(where, "unknown reason");
  if (!Array.isArray(m.entries)) throw corrupt(where, "no entries");
  for (const entry of m.entries as ManifestEntry[]) {
    if (!entry || typeof entry.path !== "string" || typeof entry.mode !== "number") {
      throw corrupt(where, "an entry has no path or mode");
    }
    if (entry.type === "file" && !isAddress(entry.address))
      throw corrupt(where, `${entry.path} has no content address`);
  }
  const manifest = m as Manifest;
  if (entriesSha256(manifest.entries) !== manifest.sha256) throw corrupt(where, "checksum mismatch");
  return manifest;
}
