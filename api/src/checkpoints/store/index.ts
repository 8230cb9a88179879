export { syncFileSystem } from "./durability.ts";
export { EXCLUDED_FROM_REVISIONS, excludedFromRevisions } from "./excluded.ts";
export {
  createFileCheckpointStore,
  type FileCheckpointStore,
  type FileCheckpointStoreOptions,
} from "./file-store.ts";
export { SharedExclusiveLock, type StoreLock } from "./lock.ts";
export { DEFAULT_RETENTION, type RetentionPolicy, selectForRemoval } from "./retention.ts";
export {
  type CheckpointSealing,
  createCheckpointSealing,
  createSealing,
  type Sealer,
  type Sealing,
  type SealingPurpose,
} from "./sealing.ts";
export {
  CHECKPOINT_REASONS,
  type CheckpointReason,
  type CheckpointStore,
  CheckpointStoreError,
  type CheckpointStoreErrorCode,
  type HomeChanges,
  type RevisionInfo,
  type WriteRevisionInput,
} from "./types.ts";
