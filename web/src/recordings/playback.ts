import { type RecordingEnd, RecordingFormatError, RecordKind } from "@cubicle/proxy/recording";
import type RFB from "@novnc/novnc";
import { problemOf } from "@/api/client.ts";
import { RecordingChannel } from "./recording-channel.ts";
import { recordBatches } from "./recording-file.ts";

export const SPEEDS = [1, 2, 4, 8] as const;
export type Speed = (typeof SPEEDS)[number];

/** What the player's controls show. Times are milliseconds from the recording's start. */
export interface PlaybackState {
  position: number;
  /** The recording's length as known so far (its catalogue entry, or the last record read). */
  duration: number;
  playing: boolean;
  speed: Speed;
  /** The body is still arriving. */
  loading: boolean;
  /** Bytes of records read so far. */
  loadedBytes: number;
  /** Playing has reached what has arrived and waits for more. */
  buffering: boolean;
  /** The picture is being brought to the position (after a seek) faster than real time. */
  seeking: boolean;
  /** The recording's END record, once read; null without one (still arriving, or cut short). */
  end: RecordingEnd | null;
  /** Why the body stopped arriving early; what arrived before still plays. */
  loadError: string | null;
  /** Why noVNC stopped showing the recording; a seek tries again. */
  playError: string | null;
}

interface Frame {
  at: number;
  bytes: Uint8Array;
}

/** How often the clock moves while playing; records due in between are shown together. */
const TICK_MS = 50;
/**
 * Server bytes handed to noVNC before the page gets a turn. While noVNC waits for an image to
 * decode, what it is given piles up in its receive queue (40 MiB at most), so a seek through a
 * long recording is fed in slices, never all at once.
 */
const SLICE_BYTES = 1 << 20;

/**
 * Plays a recording into a noVNC canvas: the body of `…/content` is read as it arrives, each
 * SERVER record goes to noVNC at its time (scaled by the speed), and a seek starts a new noVNC on a
 * new channel fed everything up to the moment at once (the picture is the sum of every update
 * before it: there is no keyframe to start from).
 *
 * The clock waits for the picture: while records due are still being fed (a seek) or not yet
 * here (a slow network), the position does not move.
 */
export class RecordingPlayback {
  readonly #Rfb: typeof RFB;
  readonly #target: HTMLElement;
  readonly #onChange: (state: PlaybackState) => void;
  readonly #abort = new AbortController();
  readonly #frames: Frame[] = [];
  #state: PlaybackState;
  /** The time of the last record read: nothing at or before it is still to come. */
  #loadedUntil = 0;
  #rfb: RFB | null = null;
  #channel: RecordingChannel | null = null;
  /** The next frame the current noVNC has not been given. */
  #next = 0;
  /** The clock: `position` was `#anchorPosition` at `#anchorWall` (performance.now()). */
  #anchorPosition = 0;
  #anchorWall = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #destroyed = false;

  constructor(options: {
    /** noVNC's RFB class, loaded by the page (noVNC needs a browser to load). */
    Rfb: typeof RFB;
    target: HTMLElement;
    /** The duration the catalogue gives; the records read may extend it. */
    durationMs: number;
    startAt: number;
    onChange: (state: PlaybackState) => void;
  }) {
    this.#Rfb = options.Rfb;
    this.#target = options.target;
    this.#onChange = options.onChange;
    this.#state = {
      position: 0,
      duration: options.durationMs,
      playing: false,
      speed: 1,
      loading: true,
      loadedBytes: 0,
      buffering: false,
      seeking: false,
      end: null,
      loadError: null,
      playError: null,
    };
    this.seek(options.startAt);
  }

  get state(): PlaybackState {
    return this.#state;
  }

  /** Reads the recording from its content URL until it ends, the page leaves or it fails. */
  async load(url: string): Promise<void> {
    try {
      const response = await fetch(url, { credentials: "same-origin", signal: this.#abort.signal });
      if (!response.ok) throw await problemOf(response);
      if (!response.body) throw new Error("The browser gave no way to read the recording as it arrives.");
      for await (const records of recordBatches(response.body)) {
        let bytes = 0;
        for (const record of records) {
          this.#loadedUntil = record.at;
          if (record.kind === RecordKind.SERVER) {
            this.#frames.push({ at: record.at, bytes: record.bytes });
            bytes += record.bytes.length;
          } else if (record.kind === RecordKind.END) {
            const { complete, reason } = record;
            this.#update({ end: reason === undefined ? { complete } : { complete, reason } });
          }
        }
        this.#update({
          loadedBytes: this.#state.loadedBytes + bytes,
          duration: Math.max(this.#state.duration, this.#loadedUntil),
        });
        this.#kick();
      }
      this.#update({ loading: false, duration: Math.max(this.#state.duration, this.#loadedUntil) });
    } catch (error) {
      if (this.#destroyed) return;
      const message =
        error instanceof RecordingFormatError
          ? `The recording is damaged after ${formatClock(this.#loadedUntil)}: ${error.message}.`
          : error instanceof Error
            ? error.message
            : String(error);
      // what arrived before the failure still plays
      this.#update({ loading: false, loadError: message });
    }
    this.#kick();
  }

  play(): void {
    if (this.#state.playing) return;
    // at the end, playing again starts over
    if (!this.#state.loading && this.#state.position >= this.#state.duration) this.seek(0);
    this.#anchorWall = performance.now();
    this.#update({ playing: true });
    this.#kick();
  }

  pause(): void {
    if (!this.#state.playing) return;
    this.#anchorPosition = this.#now();
    this.#anchorWall = performance.now();
    this.#update({ playing: false, position: this.#anchorPosition });
    this.#kick();
  }

  setSpeed(speed: Speed): void {
    this.#anchorPosition = this.#now();
    this.#anchorWall = performance.now();
    this.#update({ speed });
    this.#kick();
  }

  /** Shows the screen as it was `ms` into the recording, and goes on from there if playing. */
  seek(ms: number): void {
    // while the body arrives, a later moment (a link's ?at=) is waited for
    const limit = this.#state.loading ? Number.POSITIVE_INFINITY : this.#state.duration;
    const position = Math.max(0, Math.min(Math.round(ms), limit));
    this.#restart();
    this.#anchorPosition = position;
    this.#anchorWall = performance.now();
    this.#update({ position, playError: null });
    this.#kick();
  }

  destroy(): void {
    this.#destroyed = true;
    this.#abort.abort();
    clearTimeout(this.#timer);
    this.#rfb?.disconnect();
    this.#rfb = null;
  }

  /** A fresh noVNC on a fresh channel, past the handshake and given no record yet. */
  #restart(): void {
    this.#rfb?.disconnect();
    this.#rfb = null;
    this.#next = 0;
    const channel = new RecordingChannel();
    const rfb = new this.#Rfb(this.#target, channel);
    rfb.viewOnly = true;
    rfb.scaleViewport = true;
    rfb.background = "transparent";
    rfb.addEventListener("disconnect", () => {
      if (this.#rfb !== rfb) return;
      this.#rfb = null;
      this.#anchorPosition = this.#now();
      this.#update({
        playing: false,
        playError: `The player could not show the recording at ${formatClock(this.#anchorPosition)}; it may be damaged there.`,
      });
    });
    channel.open();
    this.#rfb = rfb;
    this.#channel = channel;
  }

  /** The clock's position now, before any waiting is applied. */
  #now(): number {
    if (!this.#state.playing) return this.#anchorPosition;
    return this.#anchorPosition + (performance.now() - this.#anchorWall) * this.#state.speed;
  }

  /** Runs the clock at once (state changed, records arrived), instead of at its next tick. */
  #kick(): void {
    if (this.#destroyed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#tick(), 0);
  }

  #tick(): void {
    if (this.#destroyed) return;
    const loading = this.#state.loading;
    let position = loading ? this.#now() : Math.min(this.#now(), this.#state.duration);
    let playing = this.#state.playing;
    if (!loading && position >= this.#state.duration && playing) playing = false;
    const buffering = loading && position > this.#loadedUntil;

    let budget = SLICE_BYTES;
    const channel = this.#rfb ? this.#channel : null;
    while (channel && budget > 0) {
      const frame = this.#frames[this.#next];
      if (!frame || frame.at > position) break;
      channel.push(frame.bytes);
      budget -= frame.bytes.length;
      this.#next += 1;
    }
    const upcoming = this.#frames[this.#next];
    const seeking = channel !== null && upcoming !== undefined && upcoming.at <= position;

    // the clock stands while the picture catches up, while what comes next has not arrived, and
    // once paused or at the end
    if (seeking || buffering || !playing) {
      this.#anchorPosition = position;
      this.#anchorWall = performance.now();
    }
    position = Math.round(position);
    this.#update({ position, playing, buffering, seeking });

    if (seeking) this.#timer = setTimeout(() => this.#tick(), 0);
    else if (playing && !buffering) {
      const untilNext = upcoming ? (upcoming.at - position) / this.#state.speed : TICK_MS;
      this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.min(TICK_MS, untilNext)));
    }
    // otherwise the next change (play, seek, records arriving) kicks the clock
  }

  #update(change: Partial<PlaybackState>): void {
    const next = { ...this.#state, ...change };
    if ((Object.keys(change) as (keyof PlaybackState)[]).every((key) => next[key] === this.#state[key]))
      return;
    this.#state = next;
    this.#onChange(next);
  }
}

/** "1:05" for 65 000 ms; "1:02:05" past an hour. */
export function formatClock(ms: number): string {
  const total = Math.floor(Math.max(0, ms) / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}
