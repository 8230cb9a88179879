"use client";

import { useEffect, useId, useRef, useState } from "react";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { formatBytes } from "@/ui/format.ts";
import { InputList } from "./input-list.tsx";
import { formatClock, type PlaybackState, RecordingPlayback, SPEEDS, type Speed } from "./playback.ts";
import { contentHref, type Recording, type RecordingInput } from "./queries.ts";
import styles from "./recordings.module.css";

/** Dragging the timeline or holding an arrow key seeks once it settles, not at every step. */
const SEEK_SETTLE_MS = 200;

/**
 * Where a key moves the timeline: arrows by 5 s, Page Up / Down by 30 s, Home and End to either
 * end (a range input's own steps would be a millisecond each with `step="any"`); null for other keys.
 */
function keyedPosition(key: string, position: number, duration: number): number | null {
  const by = {
    ArrowLeft: -5_000,
    ArrowDown: -5_000,
    ArrowRight: 5_000,
    ArrowUp: 5_000,
    PageDown: -30_000,
    PageUp: 30_000,
  }[key];
  if (by !== undefined) return Math.max(0, Math.min(duration, position + by));
  if (key === "Home") return 0;
  if (key === "End") return duration;
  return null;
}

/**
 * The replay of one recording: noVNC fed from the recording (see playback.ts) with play / pause,
 * speed, a timeline to seek on, and for a take-over the inputs beside it (a row seeks there).
 */
export function RecordingPlayer({
  workspaceId,
  recording,
  startAt,
  inputs,
  inputsError,
}: {
  workspaceId: string;
  recording: Recording;
  startAt: number;
  /** A take-over's inputs (undefined while they load); a bot's session has none to list. */
  inputs: readonly RecordingInput[] | undefined;
  inputsError: unknown;
}) {
  const id = useId();
  const target = useRef<HTMLDivElement>(null);
  const playback = useRef<RecordingPlayback | null>(null);
  const [state, setState] = useState<PlaybackState | null>(null);
  const [startError, setStartError] = useState<string | null>(null);
  // where the timeline was dragged to, until the seek it asks for is made
  const [scrub, setScrub] = useState<number | null>(null);
  const settle = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  // One playback per recording: a refetched catalogue entry (a recording still being made) must not
  // start it over, so only the ids restart it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: durationMs and startAt are where it starts, not what it plays
  useEffect(() => {
    let stopped = false;
    let created: RecordingPlayback | null = null;
    import("@novnc/novnc")
      .then(({ default: Rfb }) => {
        if (stopped || !target.current) return;
        created = new RecordingPlayback({
          Rfb,
          target: target.current,
          durationMs: recording.durationMs,
          startAt,
          onChange: setState,
        });
        playback.current = created;
        setState(created.state);
        void created.load(contentHref(workspaceId, recording.id));
      })
      .catch((error: unknown) =>
        setStartError(`The player could not start: ${error instanceof Error ? error.message : error}`),
      );
    return () => {
      stopped = true;
      clearTimeout(settle.current);
      created?.destroy();
      playback.current = null;
    };
  }, [workspaceId, recording.id]);

  const seek = (at: number) => {
    clearTimeout(settle.current);
    setScrub(null);
    playback.current?.seek(at);
  };
  const scrubTo = (at: number) => {
    setScrub(at);
    clearTimeout(settle.current);
    settle.current = setTimeout(() => seek(at), SEEK_SETTLE_MS);
  };

  const position = scrub ?? state?.position ?? startAt;
  const duration = Math.max(state?.duration ?? recording.durationMs, position);
  const atEnd = state !== null && !state.loading && state.position >= state.duration;
  return (
    <div className={styles.layout}>
      <figure
        className={`screen ${styles.player}`}
        data-testid="recording-player"
        data-position={state?.position ?? ""}
        data-loading={state?.loading ?? true}
        data-seeking={state?.seeking ?? false}
        data-playing={state?.playing ?? false}
      >
        <div
          ref={target}
          className="screen-canvas"
          role="img"
          aria-label={`The screen at ${formatClock(position)} of the recording`}
        />
        <div className={styles.controls}>
          <button
            type="button"
            className="primary"
            disabled={state === null}
            onClick={() => (state?.playing ? playback.current?.pause() : playback.current?.play())}
          >
            {state?.playing ? "Pause" : atEnd ? "Play again" : "Play"}
          </button>
          <div className={styles.timeline}>
            <label htmlFor={`${id}-time`} className="visually-hidden">
              Position in the recording
            </label>
            <input
              id={`${id}-time`}
              type="range"
              min={0}
              max={duration}
              // any millisecond: a step would keep the slider off the end of most recordings
              step="any"
              value={position}
              disabled={state === null}
              aria-valuetext={`${formatClock(position)} of ${formatClock(duration)}`}
              onChange={(event) => scrubTo(Number(event.target.value))}
              onKeyDown={(event) => {
                const to = keyedPosition(event.key, position, duration);
                if (to === null) return;
                event.preventDefault();
                scrubTo(to);
              }}
            />
            <span className={styles.clock}>
              {formatClock(position)} / {formatClock(duration)}
            </span>
          </div>
          <label className="row">
            Speed
            <select
              value={state?.speed ?? 1}
              disabled={state === null}
              onChange={(event) => playback.current?.setSpeed(Number(event.target.value) as Speed)}
            >
              {SPEEDS.map((speed) => (
                <option key={speed} value={speed}>
                  {speed}×
                </option>
              ))}
            </select>
          </label>
        </div>
        <figcaption className="small">
          <PlaybackNote state={state} atEnd={atEnd} recording={recording} />
        </figcaption>
        {startError ? (
          <p className="notice error" role="alert">
            {startError}
          </p>
        ) : null}
        {state?.loadError ? (
          <p className="notice error" role="alert">
            {state.loadedBytes === 0
              ? "The recording could not be loaded"
              : `The recording stopped loading at ${formatClock(state.duration)}; what came before plays`}
            : {state.loadError}
          </p>
        ) : null}
        {state?.playError ? (
          <p className="notice error" role="alert">
            {state.playError}
          </p>
        ) : null}
      </figure>
      {recording.kind === "control" ? (
        <section className={`card ${styles.side}`} aria-labelledby={`${id}-inputs`}>
          <h2 id={`${id}-inputs`}>Inputs</h2>
          {inputsError ? (
            <ErrorNote error={inputsError} prefix="What was typed and clicked could not be loaded" />
          ) : inputs === undefined ? (
            <Loading what="what was typed and clicked" />
          ) : inputs.length === 0 ? (
            <p className="muted small">Nothing was typed or clicked during this take-over.</p>
          ) : (
            <InputList inputs={inputs} position={position} onSeek={seek} />
          )}
        </section>
      ) : null}
    </div>
  );
}

/** What the player is doing, for everyone (announced politely): loading, waiting, seeking, ended. */
function PlaybackNote({
  state,
  atEnd,
  recording,
}: {
  state: PlaybackState | null;
  atEnd: boolean;
  recording: Recording;
}) {
  let note: string;
  if (state === null) note = "Starting the player…";
  else if (state.seeking) note = `Going to ${formatClock(state.position)}…`;
  else if (state.buffering) note = "Waiting for the recording to arrive…";
  else if (atEnd)
    note =
      state.end?.complete === false || recording.status === "incomplete"
        ? "The recording stops here: it is incomplete."
        : "End of the recording.";
  else if (state.playing) note = `Playing at ${state.speed}×.`;
  else note = "Paused.";
  const loaded = state?.loading
    ? ` Loaded ${formatBytes(state.loadedBytes)}${recording.bytes > 0 ? ` of ${formatBytes(recording.bytes)}` : ""}.`
    : "";
  return (
    <span role="status" aria-live="polite">
      {note}
      {loaded}
    </span>
  );
}
