"use client";

import { DownloadLink } from "@/checkpoints/download-link.tsx";
import { Busy, ErrorNote } from "@/ui/feedback.tsx";
import { formatBytes } from "@/ui/format.ts";
import { exportHref, useRecordingExport, useRequestExport } from "./queries.ts";

/**
 * "Export video": the api makes a WebM of the recording in the background (audited); its progress
 * shows here until it is ready to download, for people outside Cubicle.
 */
export function ExportVideo({ workspaceId, recordingId }: { workspaceId: string; recordingId: string }) {
  const request = useRequestExport(workspaceId, recordingId);
  const followed = useRecordingExport(workspaceId, recordingId, request.data?.id);
  const made = followed.data ?? request.data;
  const working = request.isPending || made?.status === "queued" || made?.status === "running";
  return (
    <div className="stack">
      <div className="row">
        <button type="button" disabled={working} onClick={() => request.mutate()}>
          Export video
        </button>
        {made?.status === "ready" ? (
          <DownloadLink
            href={exportHref(workspaceId, recordingId, made.id)}
            title={`Download the video (WebM${made.bytes === null ? "" : `, ${formatBytes(made.bytes)}`})`}
          >
            Download video
          </DownloadLink>
        ) : null}
      </div>
      {request.isPending ? <Busy label="Asking for a video…" /> : null}
      {made?.status === "queued" ? <Busy label="The video waits for its turn…" /> : null}
      {made?.status === "running" ? (
        <label className="stack small">
          <span role="status">Making the video: {Math.round(made.progress * 100)}%</span>
          <progress value={made.progress} max={1} />
        </label>
      ) : null}
      {made?.status === "ready" ? (
        <span role="status" className="small">
          The video is ready.
        </span>
      ) : null}
      {made?.status === "failed" ? (
        <p className="notice error" role="alert">
          The video could not be made: {made.error ?? "the export failed."}
        </p>
      ) : null}
      <ErrorNote error={request.error} prefix="No video was made" />
      <ErrorNote error={followed.error} prefix="The video's progress could not be read" />
    </div>
  );
}
