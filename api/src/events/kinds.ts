/**
 * The audit actions a workspace's members see live as events (GET /v1/workspaces/{id}/events),
 * each sent under its own name: one vocabulary for the audit log and the stream. What is here is
 * what changes what the dashboard shows of computers, sessions, screens and checkpoints.
 * Left out, on purpose: heartbeats and renewals (`session.renewed`, `screen.control_renewed`,
 * every few seconds and changing nothing anyone sees but an expiry), what a session does with
 * its tools (`session.shell`, `computer.file_written`…: the audit log's, and as frequent as the
 * work), `computer.egress_refused` (one per refused destination and window, which a busy bot
 * produces in bursts; the audit log and the metric carry it) and admin-only records (downloads,
 * policy changes, key use).
 */
export const EVENT_ACTIONS = [
  // a computer's settled states (computers/lifecycle.ts); its transitional ones are not audited
  "computer.created",
  "computer.started",
  "computer.start_failed",
  "computer.stopped",
  "computer.stop_failed",
  "computer.destroyed",
  "computer.destroy_failed",
  // sessions (sessions/leases.ts)
  "session.opened",
  "session.ended",
  "session.expired",
  // a person's control of a screen (screens/control-leases.ts)
  "screen.control_granted",
  "screen.control_released",
  "screen.control_expired",
  "screen.control_revoked",
  // checkpoints (checkpoints/checkpoints.ts, retries.ts); pruned: revisions left the timeline;
  // abandoned: its retries gave up, so the pending retry the timeline showed is gone
  "checkpoint.created",
  "checkpoint.failed",
  "checkpoint.abandoned",
  "checkpoint.restored",
  "checkpoint.pruned",
] as const;

export type EventAction = (typeof EVENT_ACTIONS)[number];

const ACTIONS: ReadonlySet<string> = new Set(EVENT_ACTIONS);

export const isEventAction = (action: string): action is EventAction => ACTIONS.has(action);

/**
 * The Postgres channel that wakes streams: its payload is a workspace id, sent in the transaction
 * that records the event, so every replica hears it when (and only if) the event commits.
 */
export const WORKSPACE_EVENTS_CHANNEL = "cubicle_workspace_events";
