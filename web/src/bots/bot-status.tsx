import { Time } from "@/ui/time.tsx";
import type { Bot } from "./queries.ts";

const STATUS: Record<Bot["status"], { label: string; tone: string }> = {
  idle: { label: "Idle", tone: "ok" },
  busy: { label: "Busy", tone: "warn" },
  archived: { label: "Archived", tone: "" },
};

export const MODE_LABELS: Record<Bot["computerMode"], string> = { team: "Team", private: "Private" };

export function StatusBadge({ status }: { status: Bot["status"] }) {
  const { label, tone } = STATUS[status];
  return <span className={`badge ${tone}`}>{label}</span>;
}

const HOLDERS: Record<NonNullable<Bot["session"]>["holder"]["type"], string> = {
  user: "a person",
  api_key: "an API key",
};

/** The bot's open session: who holds it and until when (it ends unless kept alive by heartbeats). */
export function SessionSummary({ session }: { session: Bot["session"] }) {
  if (!session) return <span className="muted">None</span>;
  return (
    <span className="small">
      Open, held by {HOLDERS[session.holder.type]}; expires <Time iso={session.expiresAt} />
      <br />
      <code title={session.id}>{session.id}</code>
    </span>
  );
}
