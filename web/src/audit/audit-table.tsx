import Link from "next/link";
import { playerHref, recordingsHref } from "@/recordings/queries.ts";
import { exactTime } from "@/ui/format.ts";
import { Time } from "@/ui/time.tsx";
import styles from "./audit.module.css";
import type { AuditEvent } from "./queries.ts";

const ACTOR_TYPES: Record<AuditEvent["actor"]["type"], string> = {
  user: "Person",
  api_key: "API key",
  system: "System",
  anonymous: "Anonymous",
};

export function AuditTable({ events, label }: { events: AuditEvent[]; label: string }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{label}</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Object</th>
            <th scope="col">IP</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <AuditRow key={event.id} event={event} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * Where a row's screen recording is: the recording a control grant or a session's recorder made
 * (its data names it; it starts then), the moment a playback showed, or the recordings of a
 * take-over or of a session (a session may be recorded in several, one after another).
 */
function recordingLink(event: AuditEvent): { href: string; label: string } | null {
  const { workspaceId, data, target, action } = event;
  if (!workspaceId || action === "recording.deleted") return null;
  const recordingId =
    typeof data.recordingId === "string" ? data.recordingId : target?.type === "recording" ? target.id : null;
  if (recordingId)
    return {
      href: playerHref(workspaceId, recordingId, typeof data.at === "number" ? data.at : undefined),
      label: "Play the recording",
    };
  if (action.startsWith("screen.control_") && typeof data.leaseId === "string")
    return {
      href: recordingsHref(workspaceId, { controlLeaseId: data.leaseId }),
      label: "Recordings of this take-over",
    };
  if (action === "session.opened" && target?.type === "session")
    return {
      href: recordingsHref(workspaceId, { sessionId: target.id }),
      label: "Recordings of this session",
    };
  return null;
}

function AuditRow({ event }: { event: AuditEvent }) {
  const { actor, target } = event;
  const hasData = Object.keys(event.data).length > 0;
  const recording = recordingLink(event);
  return (
    <tr>
      <td className={styles.time}>
        {/* Exact, since an audit trail is read for when; the relative time helps scanning. */}
        <time dateTime={event.occurredAt}>{exactTime(event.occurredAt)}</time>
        <div className="small muted">
          <Time iso={event.occurredAt} />
        </div>
      </td>
      <td>
        {actor.label ?? actor.id ?? <span className="muted">unknown</span>}
        <div className="small muted">
          {ACTOR_TYPES[actor.type]}
          {actor.id && actor.label ? (
            <>
              {" "}
              <code>{actor.id}</code>
            </>
          ) : null}
        </div>
      </td>
      <td>
        <code>{event.action}</code>
        {recording ? (
          <div className="small">
            <Link href={recording.href}>{recording.label}</Link>
          </div>
        ) : null}
      </td>
      <td>
        {target ? (
          <>
            {target.type}
            <div className="small">
              <code>{target.id}</code>
            </div>
          </>
        ) : (
          <span className="muted">none</span>
        )}
      </td>
      <td>{event.ip ?? <span className="muted">none</span>}</td>
      <td>
        {hasData || event.requestId ? (
          <details>
            <summary className="small">Show</summary>
            {hasData ? <pre className={styles.data}>{JSON.stringify(event.data, null, 2)}</pre> : null}
            {event.requestId ? (
              <div className="small muted">
                Request <code>{event.requestId}</code>
              </div>
            ) : null}
          </details>
        ) : null}
      </td>
    </tr>
  );
}
