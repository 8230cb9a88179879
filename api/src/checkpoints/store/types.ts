import type { CheckpointReason } from "@cubicle/db";
import type { HomeListing } from "@cubicle/providers/contract";

// Why a revision was taken: the domain's vocabulary, owned by the database schema.
export { CHECKPOINT_REASONS, type CheckpointReason } from "@cubicle/db";

/** One immutable revision of a home. */
export interface RevisionInfo {
  /** Sortable by time: a later revision of the same store has a greater id. */
  id: string;
  homeKey: string;
  parentId: string | null;
  reason: CheckpointReason;
  /** Total bytes of file contents in the revision. */
  sizeBytes: number;
  /** Regular files in the revision (directories and symlinks not counted). */
  fileCount: number;
  /** sha256 (hex) of the revision's manifest: its canonical, sorted list of entries. */
  sha256: string;
  createdAt: Date;
  /** Content bytes this revision actually added to the store (0 for an unchanged home). */
  newBytes: number;
}

export interface RevisionDescription {
  homeKey: string;
  /** The workspace the home belongs to: its contents are addressed with its own key. */
  workspaceId: string;
  parentId: string | null;
  reason: CheckpointReason;
}

/**
 * A home to be listed (a provider's listHome) and read in part (its exportHome with `paths`):
 * files whose stamp is the one the parent revision recorded for them are taken from it unread,
 * everything else is read. The listing is taken while the parent revision is loaded.
 */
export interface HomeChanges {
  /** The home listed now, or null when it cannot be (it is then read whole). */
  list(): Promise<HomeListing | null>;
  /** The named entries alone as a tar stream (as exportHome gives them), or with null the whole home. */
  read(paths: readonly string[] | null): Promise<ReadableStream<Uint8Array>>;
}

export type WriteRevisionInput = RevisionDescription &
  (
    | {
        /** The whole home as a tar stream, as a provider's exportHome gives it (paths relative to the home). */
        tar: ReadableStream<Uint8Array>;
        changes?: never;
      }
    | { changes: HomeChanges; tar?: never }
  );

/**
 * Where revisions of homes live. The filesystem store is the first; an object store can sit
 * beside it behind the same interface.
 */
export interface CheckpointStore {
  /** Reads a home (whole, or what may have changed since its parent) and stores it as a new immutable revision. */
  write(input: WriteRevisionInput): Promise<RevisionInfo>;
  /** The revision as a tar stream: same paths, types, modes, contents and link targets. */
  read(homeKey: string, revisionId: string): Promise<ReadableStream<Uint8Array>>;
  /** The home's complete revisions, newest first. */
  list(homeKey: string): Promise<RevisionInfo[]>;
  /** Removes the revisions, then garbage-collects content no kept revision needs. */
  remove(homeKey: string, revisionIds: string[]): Promise<void>;
}

export type CheckpointStoreErrorCode =
  | "INVALID_ARCHIVE"
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "CORRUPT"
  /** The store's filesystem is full (or its quota spent): nothing of the revision is kept. */
  | "NO_SPACE";

export class CheckpointStoreError extends Error {
  constructor(
    readonly code: CheckpointStoreErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "CheckpointStoreError";
  }
}
