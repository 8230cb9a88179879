"use client";

import Link from "next/link";
import { DownloadLink } from "@/checkpoints/download-link.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { AdminsOnly } from "./admins-only.tsx";
import { ExportVideo } from "./export-video.tsx";
import { contentHref, type Recording, recordingsHref, useRecording, useRecordingInputs } from "./queries.ts";
import { useRecordingFacts } from "./recording-facts.tsx";
import { RecordingPlayer } from "./recording-player.tsx";
import styles from "./recordings.module.css";

interface RecordingPageProps {
  workspaceId: string;
  recordingId: string;
  /** Where the replay starts, in ms from the recording's start. */
  startAt: number;
}

/** One recording: what it is, its replay (from `startAt` ms), download and video export. Admins only. */
export function RecordingPage(props: RecordingPageProps) {
  return (
    <AdminsOnly before={<Back workspaceId={props.workspaceId} />}>
      <RecordingDetails {...props} />
    </AdminsOnly>
  );
}

function Back({ workspaceId, recording }: { workspaceId: string; recording?: Recording }) {
  return (
    <p className="small">
      <Link href={recordingsHref(workspaceId, recording ? { computerId: recording.computerId } : {})}>
        ← {recording ? "Recordings of this computer" : "All recordings"}
      </Link>
    </p>
  );
}

function RecordingDetails({ workspaceId, recordingId, startAt }: RecordingPageProps) {
  const recording = useRecording(workspaceId, recordingId);
  const control = recording.data?.kind === "control";
  const inputs = useRecordingInputs(workspaceId, recordingId, control);
  const { factsOf } = useRecordingFacts(workspaceId);

  if (recording.isPending)
    return (
      <>
        <Back workspaceId={workspaceId} />
        <Loading what="the recording" />
      </>
    );
  if (!recording.data)
    return (
      <>
        <Back workspaceId={workspaceId} />
        <ErrorNote error={recording.error} prefix="The recording could not be loaded" />
      </>
    );
  const data = recording.data;
  const facts = factsOf(data);
  return (
    <>
      <Back workspaceId={workspaceId} recording={data} />
      <PageHeader
        title={`${facts.kind} of ${facts.where}`}
        description={
          <span className={styles.facts}>
            <span>{facts.who}</span>
            <span>Started {facts.started}</span>
            <span>{facts.length} long</span>
            <span>{facts.size}</span>
            {facts.status}
          </span>
        }
        actions={
          <DownloadLink
            href={contentHref(workspaceId, data.id, true)}
            title="Download the recording file (replays in Cubicle; audited)"
          >
            Download
          </DownloadLink>
        }
      />
      <div className="stack">
        {data.status === "incomplete" ? (
          <p className="notice warning" role="note">
            <strong>This recording is incomplete</strong>
            {data.incompleteReason ? `: ${data.incompleteReason}.` : "."} It plays up to where it stops.
          </p>
        ) : null}
        {data.status === "recording" ? (
          <p className="notice" role="note">
            This recording is still being made; it plays as far as it has been stored.
          </p>
        ) : null}
        <RecordingPlayer
          workspaceId={workspaceId}
          recording={data}
          startAt={startAt}
          inputs={inputs.data}
          inputsError={inputs.error}
        />
        <section className="card stack" aria-labelledby="export-title">
          <h2 id="export-title">Export</h2>
          <p className="muted small">
            A video (WebM) of the whole recording, for people outside Cubicle. It is made in the background;
            the download is audited.
          </p>
          <ExportVideo workspaceId={workspaceId} recordingId={data.id} />
        </section>
      </div>
    </>
  );
}
