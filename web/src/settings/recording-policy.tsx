"use client";

import Link from "next/link";
import { type FormEvent, useId, useState } from "react";
import {
  type RecordingMode,
  type RecordingPolicy,
  recordingsHref,
  useRecordingPolicy,
  useSetRecordingPolicy,
} from "@/recordings/queries.ts";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { formatBytes } from "@/ui/format.ts";
import { atLeast, type Role } from "@/workspaces/queries.ts";
import styles from "./settings.module.css";

const MODES: readonly RecordingMode[] = ["off", "control", "control-and-sessions"];

const MODE_LABELS: Record<RecordingMode, string> = {
  off: "Off",
  control: "Take-overs",
  "control-and-sessions": "Take-overs and bots' sessions",
};

const MODE_EXPLANATIONS: Record<RecordingMode, string> = {
  off: "Nothing is recorded. Recordings already made stay until retention removes them.",
  control:
    "Every time a person takes control of a screen, what the screen showed and what they typed and clicked is recorded.",
  "control-and-sessions":
    "Take-overs, and the screen of every bot's session from start to end, whether or not anyone watches.",
};

const GIB = 1024 ** 3;

/**
 * The workspace's recording policy: what is recorded, and how long and how much is kept. Everyone
 * in the workspace sees it (a recorded screen shows a mark); admins and owners change it (audited).
 */
export function RecordingPolicyPanel({ workspaceId, role }: { workspaceId: string; role: Role }) {
  const policy = useRecordingPolicy(workspaceId);
  const change = useSetRecordingPolicy(workspaceId);
  return (
    <section className="card stack" aria-labelledby="recording-policy-title">
      <h2 id="recording-policy-title">Screen recording</h2>
      <p className="muted small">
        Recordings are made by the screen proxy and kept encrypted. Only admins and owners can see, play,
        download or export them, and every playback and download is in the audit log.{" "}
        {atLeast(role, "admin") ? <Link href={recordingsHref(workspaceId)}>See the recordings</Link> : null}
      </p>
      {policy.isPending ? (
        <Loading what="the recording policy" />
      ) : !policy.data ? (
        <ErrorNote error={policy.error} prefix="Could not load the recording policy" />
      ) : (
        <>
          <p>
            Now: <strong>{MODE_LABELS[policy.data.mode]}</strong>
            <span className="muted"> · {retentionText(policy.data)}</span>
          </p>
          {atLeast(role, "admin") ? (
            <PolicyForm
              // a new form once the policy changed, so it starts from what now holds
              key={JSON.stringify(policy.data)}
              current={policy.data}
              change={change}
            />
          ) : (
            <p className="muted small">Admins and owners can change it.</p>
          )}
        </>
      )}
    </section>
  );
}

function retentionText(policy: RecordingPolicy): string {
  const days =
    policy.retentionDays === null
      ? "kept until deleted"
      : `kept ${policy.retentionDays} ${policy.retentionDays === 1 ? "day" : "days"}`;
  const bytes =
    policy.retentionBytes === null ? "no size limit" : `at most ${formatBytes(policy.retentionBytes)} in all`;
  return `${days}, ${bytes}`;
}

/** A whole number of days, or empty (keep); a size in GiB, or empty (no limit). */
function PolicyForm({
  current,
  change,
}: {
  current: RecordingPolicy;
  change: ReturnType<typeof useSetRecordingPolicy>;
}) {
  const id = useId();
  const [mode, setMode] = useState<RecordingMode>(current.mode);
  const [days, setDays] = useState(current.retentionDays === null ? "" : String(current.retentionDays));
  const [gib, setGib] = useState(
    current.retentionBytes === null ? "" : String(Number((current.retentionBytes / GIB).toFixed(3))),
  );

  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate({
      mode,
      retentionDays: days.trim() === "" ? null : Number(days),
      retentionBytes: gib.trim() === "" ? null : Math.round(Number(gib) * GIB),
    });
  };

  return (
    <form className="stack" onSubmit={onSubmit}>
      <fieldset className="stack">
        <legend>What is recorded</legend>
        {MODES.map((choice) => (
          <div key={choice}>
            <label className="choice">
              <input
                type="radio"
                name={`${id}-mode`}
                value={choice}
                checked={mode === choice}
                aria-describedby={`${id}-${choice}`}
                onChange={() => setMode(choice)}
              />
              <span>{MODE_LABELS[choice]}</span>
            </label>
            <span id={`${id}-${choice}`} className={styles.explanation}>
              {MODE_EXPLANATIONS[choice]}
            </span>
          </div>
        ))}
      </fieldset>
      <div className={styles.retention}>
        <div className="field">
          <label htmlFor={`${id}-days`}>Keep recordings for (days)</label>
          <input
            id={`${id}-days`}
            type="number"
            min={1}
            step={1}
            inputMode="numeric"
            value={days}
            aria-describedby={`${id}-days-hint`}
            onChange={(event) => setDays(event.target.value)}
          />
          <span id={`${id}-days-hint`} className="hint">
            Older ones are removed. Empty: kept until deleted.
          </span>
        </div>
        <div className="field">
          <label htmlFor={`${id}-size`}>Keep at most (GiB in all)</label>
          <input
            id={`${id}-size`}
            type="number"
            min={0.001}
            step="any"
            inputMode="decimal"
            value={gib}
            aria-describedby={`${id}-size-hint`}
            onChange={(event) => setGib(event.target.value)}
          />
          <span id={`${id}-size-hint`} className="hint">
            Past it, the oldest recordings are removed first. Empty: no limit.
          </span>
        </div>
      </div>
      <ErrorNote error={change.error} prefix="The recording policy was not changed" />
      <div className="row">
        <button type="submit" className="primary" disabled={change.isPending}>
          Save recording policy
        </button>
        <span role="status" className="muted">
          {change.isPending ? "Saving…" : change.isSuccess ? "Saved." : null}
        </span>
      </div>
    </form>
  );
}
