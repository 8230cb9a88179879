export {
  createFileCheckpointStore,
  type FileCheckpointStore,
  type FileCheckpointStoreOptions,
} from "./file-store.ts";
export { DEFAULT_RETENTION, type RetentionPolicy, selectForRemoval } from "./retention.ts";
export {
  CHECKPOINT_REASONS,
  type CheckpointReason,
  type CheckpointStore,
  CheckpointStoreError,
  type CheckpointStoreErrorCode,
  type RevisionInfo,
  type WriteRevisionInput,
} from "./types.ts";
