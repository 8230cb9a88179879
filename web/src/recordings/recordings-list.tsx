"use client";

import Link from "next/link";
import { useBots } from "@/bots/queries.ts";
import { computerName, useComputers } from "@/computers/queries.ts";
import { RoleRequired, WithRole } from "@/members/roles.tsx";
import { Busy, EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { exactTime, formatBytes } from "@/ui/format.ts";
import { Time } from "@/ui/time.tsx";
import { atLeast } from "@/workspaces/queries.ts";
import { playerHref, type RecordingFilter, recordingsHref, useRecordings } from "./queries.ts";
import {
  KIND_LABELS,
  RecordingStatus,
  recordingLength,
  recordingWhere,
  recordingWho,
} from "./recording-facts.tsx";

/**
 * The workspace's recordings, newest first, or those of one computer, session or control. Only
 * admins and owners may see recordings (the api's rule); anyone else reads why the list is missing.
 */
export function RecordingsList({ workspaceId, filter }: { workspaceId: string; filter: RecordingFilter }) {
  return (
    <WithRole>
      {(role) =>
        atLeast(role, "admin") ? (
          <List workspaceId={workspaceId} filter={filter} />
        ) : (
          <RoleRequired role={role} minimum="admin" action="see recordings" />
        )
      }
    </WithRole>
  );
}

function List({ workspaceId, filter }: { workspaceId: string; filter: RecordingFilter }) {
  const recordings = useRecordings(workspaceId, filter);
  const computers = useComputers(workspaceId);
  const bots = useBots(workspaceId, true);
  const items = recordings.data?.pages.flatMap((page) => page.items) ?? [];
  const narrowed = Object.values(filter).some(Boolean);
  const computer = computers.data?.find((one) => one.id === filter.computerId);
  return (
    <div className="stack">
      {narrowed ? (
        <p className="row">
          <span>
            Showing the recordings of{" "}
            {filter.controlLeaseId
              ? "one take-over"
              : filter.sessionId
                ? "one bot session"
                : computer
                  ? computerName(computer)
                  : "one computer"}
            .
          </span>
          <Link href={recordingsHref(workspaceId)}>Show every recording</Link>
        </p>
      ) : null}
      <ErrorNote error={recordings.error} prefix="The recordings could not be loaded" />
      {recordings.isPending ? <Loading what="recordings" /> : null}
      {recordings.isSuccess && items.length === 0 ? (
        <EmptyState title="No recordings yet">
          <p>
            Take-overs are recorded once the workspace's recording policy (in Settings) is not off; bots'
            sessions too when it records sessions.
          </p>
        </EmptyState>
      ) : null}
      {items.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Recordings, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Kind</th>
                <th scope="col">Who</th>
                <th scope="col">Computer</th>
                <th scope="col">Length</th>
                <th scope="col">Size</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {items.map((recording) => {
                const started = recording.startedAt ? exactTime(recording.startedAt) : "not started";
                return (
                  <tr key={recording.id}>
                    <td>
                      <Link
                        href={playerHref(workspaceId, recording.id)}
                        aria-label={`Play the recording of ${started}`}
                      >
                        {started}
                      </Link>
                      <div className="small muted">
                        <Time iso={recording.startedAt} />
                      </div>
                    </td>
                    <td>{KIND_LABELS[recording.kind]}</td>
                    <td>{recordingWho(recording, bots.data)}</td>
                    <td>{recordingWhere(recording, computers.data)}</td>
                    <td>{recordingLength(recording)}</td>
                    <td>{formatBytes(recording.bytes)}</td>
                    <td>
                      <RecordingStatus recording={recording} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
      {recordings.hasNextPage ? (
        <div className="row">
          <button
            type="button"
            disabled={recordings.isFetchingNextPage}
            onClick={() => recordings.fetchNextPage()}
          >
            Load more
          </button>
          {recordings.isFetchingNextPage ? <Busy label="Loading older recordings…" /> : null}
        </div>
      ) : null}
    </div>
  );
}
