import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";
import type { AccountTables } from "./account-tables.ts";

/** A timestamp column: read as Date, written as Date or ISO string, defaulted by the database. */
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type DefaultedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type GeneratedId = ColumnType<string, string | undefined, never>;

export const WORKSPACE_ROLES = ["owner", "admin", "member", "viewer"] as const;
export type WorkspaceRole = (typeof WORKSPACE_ROLES)[number];

export const COMPUTER_STATES = ["stopped", "booting", "running", "suspending", "suspended", "error"] as const;
export type ComputerState = (typeof COMPUTER_STATES)[number];

export const CHECKPOINT_REASONS = [
  "session-success",
  "session-failure",
  "stop",
  "idle",
  "manual",
  "before-restore",
] as const;
export type CheckpointReason = (typeof CHECKPOINT_REASONS)[number];

export const ACTOR_TYPES = ["user", "api_key", "system", "anonymous"] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/**
 * Egress levels as the database stores them: the provider contract's EGRESS_LEVELS (the db package
 * depends on no other; api/src/egress/ checks at compile time that the two lists agree).
 */
export const EGRESS_LEVEL_VALUES = ["open", "default", "allowlist", "offline"] as const;
export type StoredEgressLevel = (typeof EGRESS_LEVEL_VALUES)[number];
/** One allowed destination as stored in an `allow` jsonb column. */
export interface StoredEgressDestination {
  host: string;
  ports: number[];
}
/** A jsonb list of destinations: read parsed, written as its JSON text. */
type EgressAllow = ColumnType<StoredEgressDestination[], string, string>;

export type ComputerHost = "isolated" | "this-host";
export type ComputerMode = "team" | "private";

export interface DeploymentSettingsTable {
  id: ColumnType<1, 1 | undefined, never>;
  owner_user_id: string | null;
  signups_open: ColumnType<boolean, boolean | undefined, boolean>;
  computer_host: ColumnType<ComputerHost, ComputerHost | undefined, ComputerHost>;
  updated_at: DefaultedTimestamp;
}

export interface BotsTable {
  id: GeneratedId;
  workspace_id: string;
  name: string;
  charter_purpose: string;
  charter_boundary: string;
  charter_privacy_reason: ColumnType<string, string | undefined, string>;
  computer_mode: ColumnType<ComputerMode, ComputerMode | undefined, ComputerMode>;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: DefaultedTimestamp;
  archived_at: NullableTimestamp;
}

export interface ComputersTable {
  id: GeneratedId;
  workspace_id: string;
  bot_id: string | null;
  scope_key: string;
  home_key: string;
  provider_kind: string;
  provider_ref: string | null;
  state: ColumnType<ComputerState, ComputerState | undefined, ComputerState>;
  state_detail: string | null;
  last_activity_at: NullableTimestamp;
  /** Its own egress policy; null (with egress_allow) when it inherits its workspace's. */
  egress_level: ColumnType<
    StoredEgressLevel | null,
    StoredEgressLevel | null | undefined,
    StoredEgressLevel | null
  >;
  egress_allow: ColumnType<StoredEgressDestination[] | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: DefaultedTimestamp;
}

/** A workspace's egress policy, which its computers inherit; no row is the `default` level. */
export interface WorkspaceEgressPoliciesTable {
  workspace_id: string;
  level: StoredEgressLevel;
  allow: EgressAllow;
  updated_at: DefaultedTimestamp;
}

/** The web origins whose pages may open a workspace's screens and frame its embed page. */
export interface WorkspaceEmbedOriginsTable {
  workspace_id: string;
  origins: ColumnType<string[], string, string>;
  updated_at: DefaultedTimestamp;
}

/** One refused destination's audit window: when it was last audited, and what was folded since. */
export interface EgressAuditWindow {
  destination: { address: string; port: number | null; protocol: string };
  auditedAt: string;
  /** Refusals of the destination since `auditedAt` not yet in any audit entry. */
  folded: number;
  /** The first and last of those (ISO 8601), when `folded` > 0. */
  firstAt: string | null;
  lastAt: string | null;
}

/** How far the refusal job read a computer's egress report, and its audit windows by destination. */
export interface ComputerEgressRefusalsTable {
  computer_id: string;
  workspace_id: string;
  /** The machine the cursor and machine_total belong to; a new machine starts them over. */
  machine_ref: string;
  cursor: string | null;
  machine_total: number;
  /** Every refusal seen on the computer, across its machines. */
  refused_total: number;
  windows: ColumnType<Record<string, EgressAuditWindow>, string, string>;
  updated_at: DefaultedTimestamp;
}

export interface CheckpointsTable {
  id: GeneratedId;
  workspace_id: string;
  computer_id: string;
  parent_id: string | null;
  reason: CheckpointReason;
  size_bytes: number;
  file_count: number;
  sha256: string;
  /** Content bytes this revision added to the store (0 for an unchanged home). */
  new_bytes: ColumnType<number, number | undefined, never>;
  created_at: CreatedAt;
}

/** A checkpoint that failed and is tried again later (at most one per computer). */
export interface CheckpointRetriesTable {
  computer_id: string;
  workspace_id: string;
  reason: CheckpointReason;
  attempts: number;
  last_error: string;
  next_attempt_at: Timestamp;
  created_at: CreatedAt;
}

interface FencedLease {
  id: GeneratedId;
  workspace_id: string;
  computer_id: string;
  /** Drawn from the shared `lease_fence` sequence; a write carrying a smaller fence loses. */
  fence: Generated<number>;
  expires_at: Timestamp;
  created_at: CreatedAt;
}

export interface ExecutionLeasesTable extends FencedLease {
  bot_id: string;
  holder_type: "user" | "api_key";
  holder_id: string;
  status: ColumnType<"open" | "ended" | "expired", "open" | undefined, "ended" | "expired">;
  outcome: "success" | "failure" | null;
  heartbeat_at: DefaultedTimestamp;
  ended_at: NullableTimestamp;
}

export interface ScreenLeasesTable extends FencedLease {
  bot_id: string;
  execution_lease_id: string | null;
  screen_index: number;
  released_at: NullableTimestamp;
}

export interface ControlLeasesTable extends FencedLease {
  screen_index: number;
  holder_type: "user" | "api_key";
  holder_id: string;
  released_at: NullableTimestamp;
  release_reason: "released" | "expired" | "revoked" | null;
}

/** Screen capability token ids already presented to a proxy (single use across replicas). */
export interface CapabilityRedemptionsTable {
  jti: string;
  expires_at: Timestamp;
}

/** Append-only: the database refuses UPDATE, DELETE and TRUNCATE. */
export interface AuditEventsTable {
  id: ColumnType<number, never, never>;
  occurred_at: CreatedAt;
  workspace_id: string | null;
  actor_type: ActorType;
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  request_id: string | null;
  data: ColumnType<Record<string, unknown>, string | undefined, never>;
  /**
   * The writing transaction's id (xid8, which both drivers return as a decimal string); null on
   * rows older than live events. Set by the database, never by a caller.
   */
  xact: ColumnType<string | null, never, never>;
}

/**
 * Epochs of live events (api/src/events/epochs.ts): the row with the largest id is the current
 * epoch, whose events are the audit rows after `after_audit_id`; no row is epoch 0 (every row).
 * Begun at start-up when the database was restored onto another server. Never updated.
 */
export interface EventEpochsTable {
  id: ColumnType<number, never, never>;
  /** The largest audit id when the epoch began (bigint; audit ids stay below 2^53). */
  after_audit_id: ColumnType<number, number, never>;
  created_at: CreatedAt;
}

export interface ConnectorCredentialsTable {
  id: GeneratedId;
  workspace_id: string;
  name: string;
  kind: string;
  /** `<key id>.<iv>.<ciphertext+tag>`; never leaves the api process. */
  ciphertext: string;
  created_by: string | null;
  created_at: CreatedAt;
  updated_at: DefaultedTimestamp;
}

export const RECORDING_MODES = ["off", "control", "control-and-sessions"] as const;
export type RecordingMode = (typeof RECORDING_MODES)[number];
export const RECORDING_KINDS = ["control", "session"] as const;
export type RecordingKind = (typeof RECORDING_KINDS)[number];
export const RECORDING_STATUSES = ["pending", "recording", "complete", "incomplete"] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];
export const RECORDING_EXPORT_STATUSES = ["queued", "running", "ready", "failed"] as const;
export type RecordingExportStatus = (typeof RECORDING_EXPORT_STATUSES)[number];

/** What a workspace records and how long it keeps it; no row is `off`, kept for ever, no cap. */
export interface WorkspaceRecordingPoliciesTable {
  workspace_id: string;
  mode: RecordingMode;
  /** Recordings started longer ago than this are pruned; null keeps them. */
  retention_days: number | null;
  /** The workspace's recordings are pruned oldest first down to this total; null: no cap. */
  retention_bytes: number | null;
  updated_at: DefaultedTimestamp;
}

/** One recorded socket: a person's control of a screen, or a bot's screen during a session. */
export interface RecordingsTable {
  id: GeneratedId;
  workspace_id: string;
  computer_id: string;
  screen: number;
  kind: RecordingKind;
  /** Set exactly for kind `session`. */
  session_id: string | null;
  /** Set exactly for kind `control`. */
  control_lease_id: string | null;
  bot_id: string | null;
  /** The person, or the key, the recording was made for. */
  actor_type: "user" | "api_key";
  actor_id: string;
  actor_name: string;
  status: RecordingStatus;
  /** Set exactly when `incomplete`. */
  incomplete_reason: string | null;
  created_at: CreatedAt;
  started_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  /** When its upload was last heard of, while it is `recording`. */
  ingested_at: NullableTimestamp;
  duration_ms: ColumnType<number, number | undefined, number>;
  bytes: ColumnType<number, number | undefined, number>;
  width: number | null;
  height: number | null;
}

/** The seek index: one sealed chunk of a recording's record stream, always whole records. */
export interface RecordingChunksTable {
  recording_id: string;
  seq: number;
  /** Times (ms since the recording began) of the chunk's first and last records. */
  first_at: number;
  last_at: number;
  /** Where the chunk's plaintext begins within the record stream. */
  offset: number;
  bytes: number;
}

export interface RecordingExportsTable {
  id: GeneratedId;
  recording_id: string;
  workspace_id: string;
  format: "webm";
  status: ColumnType<RecordingExportStatus, RecordingExportStatus | undefined, RecordingExportStatus>;
  /** 0 to 1. */
  progress: ColumnType<number, number | undefined, number>;
  bytes: number | null;
  error: string | null;
  /** The audit label of whoever asked for it. */
  requested_by: string;
  created_at: CreatedAt;
  finished_at: NullableTimestamp;
}

export interface DomainTables {
  deployment_settings: DeploymentSettingsTable;
  bots: BotsTable;
  computers: ComputersTable;
  workspace_egress_policies: WorkspaceEgressPoliciesTable;
  workspace_embed_origins: WorkspaceEmbedOriginsTable;
  computer_egress_refusals: ComputerEgressRefusalsTable;
  checkpoints: CheckpointsTable;
  checkpoint_retries: CheckpointRetriesTable;
  execution_leases: ExecutionLeasesTable;
  screen_leases: ScreenLeasesTable;
  control_leases: ControlLeasesTable;
  capability_redemptions: CapabilityRedemptionsTable;
  audit_events: AuditEventsTable;
  event_epochs: EventEpochsTable;
  connector_credentials: ConnectorCredentialsTable;
  workspace_recording_policies: WorkspaceRecordingPoliciesTable;
  recordings: RecordingsTable;
  recording_chunks: RecordingChunksTable;
  recording_exports: RecordingExportsTable;
}

export interface Database extends DomainTables, AccountTables {}

export type AuditEvent = Selectable<AuditEventsTable>;
export type NewAuditEvent = Insertable<AuditEventsTable>;
export type Bot = Selectable<BotsTable>;
export type Computer = Selectable<ComputersTable>;
export type Checkpoint = Selectable<CheckpointsTable>;
export type CheckpointRetry = Selectable<CheckpointRetriesTable>;
export type ControlLease = Selectable<ControlLeasesTable>;
export type ComputerUpdate = Updateable<ComputersTable>;
export type Recording = Selectable<RecordingsTable>;
export type RecordingChunk = Selectable<RecordingChunksTable>;
export type RecordingExport = Selectable<RecordingExportsTable>;
