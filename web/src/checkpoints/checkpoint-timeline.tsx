"use client";

import type { Computer } from "@/computers/queries.ts";
import { Busy, EmptyState, ErrorNote, Loading } from "@/ui/feedback.tsx";
import { exactTime, formatBytes } from "@/ui/format.ts";
import { Time } from "@/ui/time.tsx";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import styles from "./checkpoints.module.css";
import { DownloadLink } from "./download-link.tsx";
import {
  archiveHref,
  type Checkpoint,
  type CheckpointList,
  useCheckpoints,
  useRestoreCheckpoint,
  useTakeCheckpoint,
} from "./queries.ts";
import { RestoreButton } from "./restore-button.tsx";

const REASONS: Record<Checkpoint["reason"], string> = {
  "session-success": "Session ended (success)",
  "session-failure": "Session ended (failure)",
  stop: "Before stopping",
  idle: "Before idle suspension",
  manual: "Taken by hand",
  "before-restore": "Before a restore",
};

const when = exactTime;

/**
 * The computer's revisions of its home, newest first: take one now (members), restore one (admins and
 * owners, into the current machine or a fresh one), download one as a tar (admins and owners).
 */
export function CheckpointTimeline({ computer, role }: { computer: Computer; role: Role | undefined }) {
  const checkpoints = useCheckpoints(computer);
  const take = useTakeCheckpoint(computer);
  const restore = useRestoreCheckpoint(computer);
  const isAdmin = atLeast(role, "admin");
  const restoring = restore.isPending ? restore.variables : undefined;
  const restoredFrom = checkpoints.data?.items.find((one) => one.id === restoring?.checkpointId);

  return (
    <div className="stack">
      {atLeast(role, "member") ? (
        <div className="row">
          <button type="button" className="primary" disabled={take.isPending} onClick={() => take.mutate()}>
            Take checkpoint
          </button>
          {take.isPending ? (
            <Busy label="Taking a checkpoint… (with a browser running this can take about 30 seconds)" />
          ) : take.isSuccess ? (
            <span role="status" className="small">
              Checkpoint taken.
            </span>
          ) : null}
        </div>
      ) : null}
      <ErrorNote error={take.error} prefix="Could not take a checkpoint" />
      {restoring ? (
        <Busy
          label={`Restoring the checkpoint of ${restoredFrom ? when(restoredFrom.createdAt) : "…"} into ${
            restoring.into === "fresh" ? "a fresh machine" : "the current machine"
          }…`}
        />
      ) : restore.isSuccess ? (
        <p role="status" className="small">
          Restored; the computer is running with the restored home.
        </p>
      ) : null}
      <ErrorNote error={restore.error} prefix="Could not restore" />

      {checkpoints.isPending ? (
        <Loading what="checkpoints" />
      ) : checkpoints.error ? (
        <ErrorNote error={checkpoints.error} prefix="Could not load the checkpoints" />
      ) : (
        <>
          <RetryNotice retry={checkpoints.data.retry} />
          {checkpoints.data.items.length === 0 ? (
            <EmptyState title="No checkpoints yet">
              <p>
                Checkpoints are taken when a session ends, before the computer stops or is suspended, and when
                someone takes one here.
              </p>
            </EmptyState>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Checkpoints of this computer, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Reason</th>
                    <th scope="col">Taken</th>
                    <th scope="col">Size</th>
                    <th scope="col">Files</th>
                    <th scope="col">New bytes</th>
                    {isAdmin ? (
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {checkpoints.data.items.map((checkpoint) => (
                    <tr key={checkpoint.id}>
                      <td className={styles.reason}>{REASONS[checkpoint.reason]}</td>
                      <td>
                        <Time iso={checkpoint.createdAt} />
                      </td>
                      <td>{formatBytes(checkpoint.sizeBytes)}</td>
                      <td>{checkpoint.fileCount.toLocaleString()}</td>
                      <td title="Content this checkpoint added to storage; files already stored cost nothing.">
                        {formatBytes(checkpoint.newBytes)}
                      </td>
                      {isAdmin ? (
                        <td>
                          <div className="row">
                            <RestoreButton
                              when={when(checkpoint.createdAt)}
                              disabled={restore.isPending}
                              onRestore={(into) => restore.mutate({ checkpointId: checkpoint.id, into })}
                            />
                            <DownloadLink
                              href={archiveHref(computer, checkpoint.id)}
                              title={`Download the home as of ${when(checkpoint.createdAt)} (tar)`}
                            >
                              Download
                            </DownloadLink>
                          </div>
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </div>
  );
}

/** A checkpoint that failed and will be tried again on its own. */
function RetryNotice({ retry }: { retry: CheckpointList["retry"] }) {
  if (!retry) return null;
  return (
    <div className="notice warning" role="status">
      <strong>A checkpoint failed and will be retried.</strong> {REASONS[retry.reason]}: {retry.lastError} (
      {retry.attempts} {retry.attempts === 1 ? "attempt" : "attempts"} so far; next{" "}
      <Time iso={retry.nextAttemptAt} />
      ).
    </div>
  );
}
