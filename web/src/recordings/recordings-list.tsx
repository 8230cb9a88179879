"use client";

import Link from "next/link";
import { computerName } from "@/computers/queries.ts";
import { Busy, EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { Time } from "@/ui/time.tsx";
import { AdminsOnly } from "./admins-only.tsx";
import { playerHref, type RecordingFilter, recordingsHref, useRecordings } from "./queries.ts";
import { useRecordingFacts } from "./recording-facts.tsx";

/**
 * The workspace's recordings, newest first, or those of one computer, session or control. Only
 * admins and owners may see recordings (the api's rule); anyone else reads why the list is missing.
 */
export function RecordingsList({ workspaceId, filter }: { workspaceId: string; filter: RecordingFilter }) {
  return (
    <AdminsOnly>
      <List workspaceId={workspaceId} filter={filter} />
    </AdminsOnly>
  );
}

function List({ workspaceId, filter }: { workspaceId: string; filter: RecordingFilter }) {
  const recordings = useRecordings(workspaceId, filter);
  const { computers, factsOf } = useRecordingFacts(workspaceId);
  const items = recordings.data?.pages.flatMap((page) => page.items) ?? [];
  const narrowed = Object.values(filter).some(Boolean);
  const computer = computers?.find((one) => one.id === filter.computerId);
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
                const facts = factsOf(recording);
                return (
                  <tr key={recording.id}>
                    <td>
                      <Link
                        href={playerHref(workspaceId, recording.id)}
                        aria-label={`Play the recording of ${facts.started}`}
                      >
                        {facts.started}
                      </Link>
                      <div className="small muted">
                        <Time iso={recording.startedAt} />
                      </div>
                    </td>
                    <td>{facts.kind}</td>
                    <td>{facts.who}</td>
                    <td>{facts.where}</td>
                    <td>{facts.length}</td>
                    <td>{facts.size}</td>
                    <td>{facts.status}</td>
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
