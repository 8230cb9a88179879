/**
 * The typed client of the supervisor's HTTP API; the providers' docker backend and the api's doctor
 * use it. Failures throw `SupervisorError` with the HTTP status and the problem's stable `code`.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import type { ActResult, CommandEvent, EgressPolicy, EgressReport, FileEntry } from "../../contract/index.ts";
import { Liveness } from "./liveness.ts";
import { parseNdjson } from "./ndjson.ts";
import type { Problem, ProblemCode } from "./problems.ts";
import {
  type ArchiveRequest,
  COMPUTER_ID_HEADER,
  type ComputerOperations,
  type ComputerRef,
  type ComputerStatus,
  type ComputerSummary,
  type ControlInfo,
  type CreateResult,
  type Diagnosis,
  type ExecRequest,
  type Health,
  type HomeListingResult,
  type ScreenInfo,
  WORKSPACE_ID_HEADER,
} from "./wire.ts";

export class SupervisorError extends Error {
  constructor(
    readonly status: number,
    /** The problem's stable code (see problems.ts), or `SUPERVISOR_UNREACHABLE` / `BAD_RESPONSE`. */
    readonly code: ProblemCode | "SUPERVISOR_UNREACHABLE" | "BAD_RESPONSE",
    message: string,
    readonly problem?: Problem,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "SupervisorError";
  }
}

export interface SupervisorClientOptions {
  /** e.g. http://127.0.0.1:7091 */
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
  /** How often calls in flight check that the supervisor answers, and how long they wait for it. */
  liveness?: { everyMs: number; withinMs: number };
}

/** Long enough for a supervisor under load (its /alive touches nothing), short enough to be told. */
const LIVENESS = { everyMs: 5_000, withinMs: 10_000 };

/** A file to write: bytes in memory, or a stream of exactly `size` bytes. */
export type FileBody = Uint8Array | { stream: ReadableStream<Uint8Array>; size: number };

/**
 * The wire contract the routes serve: the supervisor's operations as they are over HTTP. Those that
 * cross unchanged are the wire's `ComputerOperations` (one declaration, which the supervisor's
 * container manager implements); the rest differ on the wire (a stream of events, a folder listing
 * apart from a file's bytes, bodies).
 */
export interface SupervisorClient extends ComputerOperations {
  list(): Promise<ComputerSummary[]>;
  reconcile(homeKeys: readonly string[]): Promise<string[]>;

  /** Replaces the computer's egress policy; a running computer's rules are in place when it returns. */
  setEgress(computer: ComputerRef, policy: EgressPolicy): Promise<void>;
  /** The computer's egress policy, and its refusals after the cursor (all kept when null). */
  egress(
    computer: ComputerRef,
    after: string | null,
  ): Promise<{ policy: EgressPolicy; report: EgressReport }>;

  /** Events in order, ending with one `exit`; aborting `signal` kills the command (exit 130). */
  exec(
    ref: ComputerRef,
    request: ExecRequest,
    options?: { signal?: AbortSignal },
  ): AsyncIterable<CommandEvent>;

  listFiles(ref: ComputerRef, path: string): Promise<FileEntry[]>;
  /** A file's bytes as a stream; FILE_TOO_LARGE (413) before any byte when it exceeds maxBytes. */
  openFile(
    ref: ComputerRef,
    path: string,
    options: { maxBytes: number },
  ): Promise<{ size: number; body: ReadableStream<Uint8Array> }>;
  readFile(ref: ComputerRef, path: string, options: { maxBytes: number }): Promise<Uint8Array>;
  writeFile(
    ref: ComputerRef,
    path: string,
    data: FileBody,
    options?: { executable?: boolean },
  ): Promise<void>;
}

interface Call {
  method: "GET" | "PUT" | "POST" | "DELETE";
  path: string;
  ref?: ComputerRef;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Statuses that are answers, not failures (e.g. 503 from /health). */
  accept?: number[];
}

/**
 * The response with a body that says `done` once read to its end, failed or cancelled, and fails
 * in the caller's words (`failure`) when the read is cut short.
 */
function watchedBody(response: Response, done: () => void, failure: (error: unknown) => unknown): Response {
  if (response.body === null) {
    done();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            done();
            controller.close();
          } else controller.enqueue(next.value);
        } catch (error) {
          done();
          controller.error(failure(error));
        }
      },
      async cancel(reason) {
        done();
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

const computerPath = (ref: ComputerRef, rest = "") => `/computers/${encodeURIComponent(ref.homeKey)}${rest}`;

async function errorOf(response: Response): Promise<SupervisorError> {
  const text = await response.text().catch(() => "");
  let problem: Problem | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (
      typeof parsed === "object" &&
      parsed !== null &&
      "code" in parsed &&
      typeof parsed.code === "string"
    ) {
      problem = parsed as Problem;
    }
  } catch {
    // not problem JSON (a proxy in between, a crash): keep the status
  }
  if (problem) {
    return new SupervisorError(
      response.status,
      problem.code as ProblemCode,
      problem.detail ?? problem.title,
      problem,
    );
  }
  return new SupervisorError(
    response.status,
    "BAD_RESPONSE",
    `the supervisor answered ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`,
  );
}

function isCommandEvent(value: unknown): value is CommandEvent {
  return (
    typeof value === "object" &&
    value !== null &&
    "type" in value &&
    (value.type === "stdout" || value.type === "stderr" || value.type === "exit")
  );
}

export function createSupervisorClient(options: SupervisorClientOptions): SupervisorClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const fetchImpl = options.fetch ?? fetch;

  /** Where a call goes and with which headers and body. */
  function target(request: Call) {
    const url = new URL(baseUrl + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, ...request.headers };
    if (request.ref) {
      headers[COMPUTER_ID_HEADER] = request.ref.computerId;
      headers[WORKSPACE_ID_HEADER] = request.ref.workspaceId;
    }
    let body = request.body;
    if (request.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(request.json);
    }
    return { url, headers, body };
  }

  const unreachable = (error: unknown) =>
    new SupervisorError(
      0,
      "SUPERVISOR_UNREACHABLE",
      `the supervisor at ${baseUrl} is not reachable`,
      undefined,
      {
        cause: error,
      },
    );

  const liveness = new Liveness(async (signal) => {
    const answer = await fetchImpl(`${baseUrl}/alive`, { signal });
    await answer.body?.cancel();
  }, options.liveness ?? LIVENESS);

  /** The response, its body watched too: a supervisor that stops answering mid-stream fails it. */
  async function call(request: Call): Promise<Response> {
    const { url, headers, body } = target(request);
    const watch = liveness.watch();
    const signal = request.signal ? AbortSignal.any([request.signal, watch.signal]) : watch.signal;
    // the caller's own abort stays the caller's; the watch's is the supervisor's silence
    const failure = (error: unknown) => (request.signal?.aborted ? error : unreachable(error));
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: request.method,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
        signal,
      } as RequestInit);
    } catch (error) {
      watch.done();
      throw failure(error);
    }
    const watched = watchedBody(response, watch.done, failure);
    if (!watched.ok && !request.accept?.includes(watched.status)) throw await errorOf(watched);
    return watched;
  }

  /**
   * A whole home's archive, streamed. Not through fetch: undici copies its unread socket buffer
   * again each time a reader slower than the network asks for more, which made a 500 MB home
   * take minutes to checkpoint instead of seconds.
   */
  function download(
    request: Omit<Call, "body" | "json"> & { json?: ArchiveRequest },
  ): Promise<ReadableStream<Uint8Array>> {
    const { url, headers, body } = target(request);
    const watch = liveness.watch();
    return new Promise((resolve, reject) => {
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const outgoing = send(url, { method: request.method, headers }, (incoming) => {
        incoming.once("close", watch.done);
        watch.signal.addEventListener("abort", () => incoming.destroy(unreachable(watch.signal.reason)), {
          once: true,
        });
        const status = incoming.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          // a connection lost mid-archive errors the stream ("aborted"); it never just ends
          resolve(Readable.toWeb(incoming) as ReadableStream<Uint8Array>);
          return;
        }
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("error", (error) => reject(unreachable(error)));
        incoming.on("end", () => {
          void errorOf(new Response(Buffer.concat(chunks), { status })).then(reject, reject);
        });
      });
      outgoing.on("error", (error) => {
        watch.done();
        reject(unreachable(error));
      });
      watch.signal.addEventListener("abort", () => outgoing.destroy(watch.signal.reason), { once: true });
      outgoing.end(body);
    });
  }

  const json = async <T>(request: Call): Promise<T> => (await (await call(request)).json()) as T;
  const empty = async (request: Call): Promise<void> => {
    await (await call(request)).body?.cancel();
  };
  const bodyOf = (response: Response): ReadableStream<Uint8Array> =>
    response.body ?? new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });

  return {
    health: () => json<Health>({ method: "GET", path: "/health", accept: [503] }),
    diagnose: () => json<Diagnosis>({ method: "GET", path: "/diagnosis" }),
    list: async () =>
      (await json<{ computers: ComputerSummary[] }>({ method: "GET", path: "/computers" })).computers,
    create: (ref) =>
      json<CreateResult>({
        method: "PUT",
        path: computerPath(ref),
        json: { computerId: ref.computerId, workspaceId: ref.workspaceId },
      }),
    status: (ref) => json<ComputerStatus>({ method: "GET", path: computerPath(ref), ref }),
    stop: (ref) => empty({ method: "POST", path: computerPath(ref, "/stop"), ref }),
    destroy: async (ref) =>
      (await json<{ removed: boolean }>({ method: "DELETE", path: computerPath(ref), ref })).removed,
    setEgress: (ref, policy) =>
      empty({ method: "PUT", path: computerPath(ref, "/egress"), ref, json: policy }),
    egress: (ref, after) =>
      json<{ policy: EgressPolicy; report: EgressReport }>({
        method: "GET",
        path: computerPath(ref, "/egress"),
        ref,
        query: { after: after ?? undefined },
      }),
    reconcile: async (homeKeys) =>
      (await json<{ removed: string[] }>({ method: "POST", path: "/reconcile", json: { homeKeys } })).removed,

    exec(ref, request, execOptions = {}) {
      return {
        async *[Symbol.asyncIterator]() {
          const response = await call({
            method: "POST",
            path: computerPath(ref, "/exec"),
            ref,
            json: request,
            ...(execOptions.signal ? { signal: execOptions.signal } : {}),
          });
          let exited = false;
          for await (const event of parseNdjson(bodyOf(response))) {
            if (!isCommandEvent(event))
              throw new SupervisorError(502, "BAD_RESPONSE", "an unknown command event");
            yield event;
            if (event.type === "exit") {
              exited = true;
              break;
            }
          }
          if (!exited) {
            throw new SupervisorError(
              502,
              "BAD_RESPONSE",
              "the command's event stream ended without an exit",
            );
          }
        },
      };
    },

    listFiles: async (ref, path) =>
      (
        await json<{ entries: FileEntry[] }>({
          method: "GET",
          path: computerPath(ref, "/files"),
          ref,
          query: { path, expect: "directory" },
        })
      ).entries,
    async openFile(ref, path, { maxBytes }) {
      const response = await call({
        method: "GET",
        path: computerPath(ref, "/files"),
        ref,
        query: { path, maxBytes, expect: "file" },
      });
      return { size: Number(response.headers.get("content-length") ?? 0), body: bodyOf(response) };
    },
    async readFile(ref, path, { maxBytes }) {
      const response = await call({
        method: "GET",
        path: computerPath(ref, "/files"),
        ref,
        query: { path, maxBytes, expect: "file" },
      });
      return new Uint8Array(await response.arrayBuffer());
    },
    writeFile: (ref, path, data, writeOptions = {}) =>
      empty({
        method: "PUT",
        path: computerPath(ref, "/files"),
        ref,
        query: { path, executable: writeOptions.executable === true },
        ...(data instanceof Uint8Array
          ? { body: new Uint8Array(data), headers: { "content-type": "application/octet-stream" } }
          : {
              body: data.stream,
              headers: { "content-type": "application/octet-stream", "content-length": String(data.size) },
            }),
      }),
    deleteFile: (ref, path) =>
      empty({ method: "DELETE", path: computerPath(ref, "/files"), ref, query: { path } }),

    exportHome: (ref, exportOptions = {}) =>
      exportOptions.paths
        ? download({
            method: "POST",
            path: computerPath(ref, "/archive"),
            ref,
            json: { paths: [...exportOptions.paths] },
          })
        : download({ method: "GET", path: computerPath(ref, "/archive"), ref }),
    listHome: async (ref) =>
      (await json<HomeListingResult>({ method: "GET", path: computerPath(ref, "/home-listing"), ref }))
        .listing,
    importHome: (ref, tar) =>
      empty({
        method: "PUT",
        path: computerPath(ref, "/archive"),
        ref,
        body: tar,
        headers: { "content-type": "application/x-tar" },
      }),

    settleBrowsers: (ref) => empty({ method: "POST", path: computerPath(ref, "/browsers/settle"), ref }),
    closeBrowsers: (ref) => empty({ method: "POST", path: computerPath(ref, "/browsers/close"), ref }),

    openScreen: (ref, index) =>
      json<ScreenInfo>({ method: "PUT", path: computerPath(ref, `/screens/${index}`), ref }),
    closeScreen: (ref, index) =>
      empty({ method: "DELETE", path: computerPath(ref, `/screens/${index}`), ref }),
    openControl: (ref, index, password) =>
      json<ControlInfo>({
        method: "PUT",
        path: computerPath(ref, `/screens/${index}/control`),
        ref,
        json: { password },
      }),
    closeControl: (ref, index) =>
      empty({ method: "DELETE", path: computerPath(ref, `/screens/${index}/control`), ref }),
    async observe(ref, index) {
      const response = await call({
        method: "GET",
        path: computerPath(ref, `/screens/${index}/observe`),
        ref,
      });
      const number = (name: string) => Number(response.headers.get(name) ?? 0);
      const title = response.headers.get("x-active-window");
      return {
        png: new Uint8Array(await response.arrayBuffer()),
        width: number("x-width"),
        height: number("x-height"),
        cursor: { x: number("x-cursor-x"), y: number("x-cursor-y") },
        activeWindow: title === null ? null : decodeURIComponent(title),
      };
    },
    act: (ref, index, actions) =>
      json<ActResult>({
        method: "POST",
        path: computerPath(ref, `/screens/${index}/act`),
        ref,
        json: { actions },
      }),
  };
}
