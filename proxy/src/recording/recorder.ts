import { type ClientRequest, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { ProxyMetrics } from "../metrics.ts";
import {
  encodeRecord,
  MAX_RECORD_AT,
  MAX_RECORD_PAYLOAD,
  type RecordingEnd,
  type RecordingRecord,
  RecordKind,
} from "./format.ts";

const FELL_BEHIND_REASON = "the recording fell behind the screen";
export const FELL_BEHIND: RecordingEnd = { complete: false, reason: FELL_BEHIND_REASON };

/**
 * How long an ended part of the upload may take to reach api and be answered before it is cut:
 * api then keeps the whole records it got and marks the recording incomplete, as for a proxy that
 * went away.
 */
const ANSWER_TIMEOUT_MS = 30_000;

type RecordingFailure = "fell-behind" | "refused" | "unreachable" | "timeout";

export interface RecorderOptions {
  recordingId: string;
  /** api's base URL: the upload goes to `/internal/recordings/{id}/content` below it. */
  apiUrl: string;
  /** The service token's header value (ApiLink.authorization()). */
  authorization: string;
  /** Bytes that may wait for api to take them (PROXY_RECORDING_BUFFER_BYTES). */
  maxBufferedBytes: number;
  /** How long one upload request carries records before the next takes over (PROXY_RECORDING_PART_MS). */
  partMs: number;
  metrics: ProxyMetrics;
  logger: Logger;
}

/** One request of the upload. */
interface Part {
  readonly request: ClientRequest;
  /** Bytes of records sent in the parts before it: where it continues the recording. */
  readonly offset: number;
  /** Bytes of records written to it. */
  bytes: number;
  /** Its body was ended: records made from now on wait for the next part. */
  ended: boolean;
  /** It carries the END record: its answer ends the upload. */
  last: boolean;
}

/**
 * Streams one socket's recording to api as it happens, written as the bridge relays. Nothing
 * here ever waits: the live socket must not slow down for a recording.
 *
 * The upload goes in parts, one POST each, because api's server cuts any request whose body is
 * still arriving after its requestTimeout (5 min): after `partMs` a part's body is ended (between
 * two records), and once api answered it 204 (it stored every record of it) the next part
 * continues with `?offset=` the bytes sent so far. Records made while a part's answer is awaited
 * wait in order for the next part. Only the last part carries END.
 *
 * What waits (unsent bytes of the current part and records queued for the next) never exceeds
 * `maxBufferedBytes`: past it the recording ends there, incomplete. If api answers a part early
 * (a full store: 507), refuses one (409, it does not continue what api holds), or cannot be
 * reached, recording stops and the socket goes on unrecorded.
 */
export class Recorder {
  readonly #options: RecorderOptions;
  readonly #startedAt = performance.now();
  #part: Part;
  /** Records made while the current part's answer is awaited, for the next part. */
  #queue: Uint8Array[] = [];
  #queuedBytes = 0;
  /** No more records are taken: the END was written (or queued), or the upload failed. */
  #stopped = false;
  #closed = false;
  #failure: RecordingFailure | undefined;
  #screenShown = false;
  readonly #settled: Promise<void>;
  #settle: () => void = () => undefined;
  #partTimer: NodeJS.Timeout | undefined;
  #answerTimer: NodeJS.Timeout | undefined;

  constructor(options: RecorderOptions) {
    this.#options = options;
    this.#settled = new Promise((resolve) => {
      this.#settle = resolve;
    });
    this.#part = this.#openPart(0);
    options.metrics.recordingsActive.inc();
  }

  /** Whether any of the screen's stream was recorded: a recording without it shows nothing. */
  get screenShown(): boolean {
    return this.#screenShown;
  }

  /** Bytes written but not yet taken by api (what counts against `maxBufferedBytes`). */
  get bufferedBytes(): number {
    return this.#part.request.writableLength + this.#queuedBytes;
  }

  /** Resolves once api took the whole recording, or the upload failed; never rejects. */
  get settled(): Promise<void> {
    return this.#settled;
  }

  /** Bytes the screen sent, as the viewer got them; copied, so `bytes` may be reused at once. */
  server(bytes: Uint8Array): void {
    if (this.#stopped) return;
    this.#screenShown = true;
    for (let offset = 0; offset < bytes.length && !this.#stopped; offset += MAX_RECORD_PAYLOAD) {
      const piece = bytes.subarray(offset, offset + MAX_RECORD_PAYLOAD);
      this.#write({ kind: RecordKind.SERVER, at: this.#now(), bytes: piece });
    }
  }

  /** One whole client message passed on to the screen. */
  client(message: Uint8Array): void {
    if (this.#stopped) return;
    // Only a ClientCutText above a raised PROXY_MAX_FRAME_BYTES is this large; a record holds
    // whole messages, and a replay lists a paste by its length only, so it is left out.
    if (message.length > MAX_RECORD_PAYLOAD) return;
    this.#write({ kind: RecordKind.CLIENT, at: this.#now(), bytes: message });
  }

  /** Writes the END record and ends the upload; a no-op once recording stopped. */
  end(end: RecordingEnd): Promise<void> {
    if (!this.#stopped) this.#finish(end);
    return this.#settled;
  }

  #now(): number {
    return Math.min(MAX_RECORD_AT, Math.floor(performance.now() - this.#startedAt));
  }

  #openPart(offset: number): Part {
    const { apiUrl, recordingId, authorization, partMs } = this.#options;
    const url = new URL(
      `${apiUrl}/internal/recordings/${encodeURIComponent(recordingId)}/content?offset=${offset}`,
    );
    // node:http rather than fetch: it tells how much of the body is still waiting (writableLength),
    // and hears api's answer while the body is still being sent
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: "POST",
      headers: { authorization, "content-type": "application/octet-stream" },
    });
    const part: Part = { request, offset, bytes: 0, ended: false, last: false };
    request.on("response", (response) => {
      response.resume();
      this.#answered(part, response.statusCode ?? 0);
    });
    request.on("error", (error) => {
      if (this.#closed || part !== this.#part) return;
      this.#failed("unreachable", error.message);
      this.#close();
    });
    this.#partTimer = setTimeout(() => this.#endPart(), partMs).unref();
    return part;
  }

  #answered(part: Part, status: number): void {
    if (this.#closed || part !== this.#part) return;
    // api answers a part before its body ended only when it stopped taking the recording (507:
    // its store failed; 409: the part does not continue what it holds)
    if (!part.ended) {
      this.#failed("refused", `api answered ${status} while the recording went on`);
      this.#close();
      return;
    }
    if (status < 200 || status > 299) {
      this.#failed("refused", `api answered ${status} to part at byte ${part.offset} of the recording`);
      this.#close();
      return;
    }
    clearTimeout(this.#answerTimer);
    if (part.last) {
      this.#close();
      return;
    }
    // api holds every record of it: the next part continues right after them, with what waited
    const next = this.#openPart(part.offset + part.bytes);
    this.#part = next;
    const queued = this.#queue;
    this.#queue = [];
    this.#queuedBytes = 0;
    for (const bytes of queued) this.#send(bytes);
    // the END waited among them
    if (this.#stopped) this.#endPart(true);
  }

  #write(record: RecordingRecord): void {
    const bytes = encodeRecord(record);
    if (this.bufferedBytes + bytes.length > this.#options.maxBufferedBytes) {
      this.#failed("fell-behind", FELL_BEHIND_REASON);
      this.#finish(FELL_BEHIND);
      return;
    }
    this.#take(bytes);
  }

  /** Into the current part if it is still open, else queued for the next. */
  #take(bytes: Uint8Array): void {
    if (!this.#part.ended) {
      this.#send(bytes);
      return;
    }
    this.#queue.push(bytes);
    this.#queuedBytes += bytes.length;
  }

  #send(bytes: Uint8Array): void {
    this.#part.request.write(bytes);
    this.#part.bytes += bytes.length;
    this.#options.metrics.recordedBytes.inc(bytes.length);
  }

  #finish(end: RecordingEnd): void {
    this.#stopped = true;
    const open = !this.#part.ended;
    this.#take(encodeRecord({ kind: RecordKind.END, at: this.#now(), ...end }));
    // between parts, the END goes with the next part, which is the last
    if (open) this.#endPart(true);
  }

  /** Ends the current part's body, on a record boundary (records are written whole). */
  #endPart(last = false): void {
    const part = this.#part;
    if (this.#closed || part.ended) return;
    clearTimeout(this.#partTimer);
    part.ended = true;
    part.last = last;
    part.request.end();
    this.#answerTimer = setTimeout(() => {
      this.#failed(
        "timeout",
        last
          ? "api did not take the recording's end in time"
          : "api did not take a part of the recording in time",
      );
      this.#close();
    }, ANSWER_TIMEOUT_MS).unref();
  }

  /** Counts and logs the first thing that went wrong; a recording fails once. */
  #failed(reason: RecordingFailure, detail: string): void {
    if (this.#failure) return;
    this.#failure = reason;
    this.#options.metrics.recordingsFailed.inc({ reason });
    this.#options.logger.warn({ recording: this.#options.recordingId, reason, detail }, "recording stopped");
  }

  /** The upload is over, one way or the other: no more records, and api's connection let go. */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopped = true;
    clearTimeout(this.#partTimer);
    clearTimeout(this.#answerTimer);
    this.#queue = [];
    this.#queuedBytes = 0;
    if (this.#failure) this.#part.request.destroy();
    this.#options.metrics.recordingsActive.dec();
    this.#settle();
  }
}
