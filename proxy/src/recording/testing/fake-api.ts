/**
 * A stand-in for api's side of the proxy's link, for recording tests: it takes recording uploads
 * (`POST /internal/recordings/{id}/content`) in the way a test asks, redeems every token id once,
 * and notes every other call (an access check, an activity report) so a test can tell it was
 * never made. Event streams are not served: the proxy finds them unavailable.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { concatBytes, type RecordingRecord, RecordReader } from "../format.ts";

/**
 * What the fake does with an upload's part: stores it and answers 204 at its end; answers 507
 * once the first bytes arrive, as api does when its store fails; does not read it until told to;
 * or refuses every part after the first with 409, as api does when a part does not continue what
 * it holds. Whatever the answer, a part whose offset is not the bytes stored is refused with 409.
 */
export type UploadAnswer = "store" | "store-full" | "stall" | "mismatch";

/** One request of a recording's upload (a part: the whole upload unless it took longer than a part). */
export class Upload {
  readonly chunks: Buffer[] = [];
  /** Resolves once the body ended or the request was cut off. */
  readonly finished: Promise<"ended" | "aborted">;

  constructor(
    readonly request: IncomingMessage,
    readonly recordingId: string,
    /** Where the part says it continues the recording (`?offset=`). */
    readonly offset: number,
  ) {
    request.on("data", (chunk: Buffer) => this.chunks.push(chunk));
    this.finished = new Promise((resolve) => {
      request.once("end", () => resolve("ended"));
      request.once("aborted", () => resolve("aborted"));
      request.once("error", () => resolve("aborted"));
    });
  }

  get bytes(): number {
    return this.chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  }

  /** The whole records received so far, in order; throws on damage as the real reader does. */
  records(): RecordingRecord[] {
    return new RecordReader().push(concatBytes(this.chunks));
  }

  /** A stalled upload is read from now on. */
  resume(): void {
    this.request.resume();
  }
}

export class FakeApi {
  answer: UploadAnswer = "store";
  /** While set, a part whose body ended is answered only once this resolves. */
  hold: Promise<void> | undefined;
  /** Every part of every upload, in the order they arrived. */
  readonly uploads: Upload[] = [];
  /** Bytes of each recording taken so far (its parts answered 204), as api's database holds them. */
  readonly stored = new Map<string, number>();
  /** Paths of every request that is neither an upload nor a redemption. */
  readonly otherCalls: string[] = [];
  readonly #server = createServer((request, response) => this.#handle(request, response));
  readonly #uploadWaiters: Array<() => void> = [];

  async start(): Promise<this> {
    this.#server.listen(0, "127.0.0.1");
    await once(this.#server, "listening");
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The `index`th upload, once it has started. */
  async upload(index = 0): Promise<Upload> {
    while (this.uploads.length <= index)
      await new Promise<void>((resolve) => this.#uploadWaiters.push(resolve));
    return this.uploads[index] as Upload;
  }

  /** The parts of one recording's upload, in order. */
  parts(recordingId: string): Upload[] {
    return this.uploads.filter((upload) => upload.recordingId === recordingId);
  }

  /** The whole records of all of one recording's parts, read as one stream as api reads them back. */
  records(recordingId: string): RecordingRecord[] {
    return new RecordReader().push(concatBytes(this.parts(recordingId).flatMap((part) => part.chunks)));
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? "/", "http://api");
    const path = url.pathname;
    const recording = /^\/internal\/recordings\/([^/]+)\/content$/.exec(path);
    if (request.method === "POST" && recording) {
      const offset = Number(url.searchParams.get("offset") ?? "0");
      this.#take(new Upload(request, decodeURIComponent(recording[1] as string), offset), response);
      return;
    }
    request.resume();
    if (path === "/internal/proxy/redemptions") {
      response.writeHead(201).end();
      return;
    }
    this.otherCalls.push(path);
    response.writeHead(path === "/internal/proxy/activity" ? 204 : 404).end();
  }

  #take(upload: Upload, response: ServerResponse): void {
    const answer = this.answer;
    this.uploads.push(upload);
    for (const wake of this.#uploadWaiters.splice(0)) wake();
    const stored = this.stored.get(upload.recordingId) ?? 0;
    if (upload.offset !== stored || (answer === "mismatch" && upload.offset > 0)) {
      response
        .writeHead(409, { "content-type": "application/problem+json", connection: "close" })
        .end(JSON.stringify({ status: 409, code: "RECORDING_OFFSET_MISMATCH" }));
      return;
    }
    if (answer === "stall") upload.request.pause();
    if (answer === "store-full") {
      upload.request.once("data", () =>
        response
          .writeHead(507, { "content-type": "application/problem+json", connection: "close" })
          .end(JSON.stringify({ status: 507, code: "RECORDING_STORE_FAILED" })),
      );
      return;
    }
    void upload.finished.then(async (how) => {
      if (how !== "ended") return;
      await this.hold;
      this.stored.set(upload.recordingId, stored + upload.bytes);
      response.writeHead(204).end();
    });
  }
}
