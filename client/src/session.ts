import type { DesktopAction } from "./actions.ts";
import { must, succeeded } from "./calls.ts";
import type { Bot, Cubicle, Schemas } from "./cubicle.ts";
import { CubicleError, errorOf, localError } from "./problem.ts";
import { mintScreenCapability, type ScreenCapability } from "./screens.ts";
import {
  ABORTED_EXIT,
  collect,
  type ShellEvent,
  type ShellRequest,
  type ShellResult,
  shellEvents,
} from "./shell.ts";

export type SessionRecord = Schemas["Session"];
export type FileList = Schemas["FileList"];
export type ActResult = Schemas["ActResult"];
export type Upload = Schemas["Upload"];

export interface SessionOptions {
  /** Heartbeat until `end()` (default true), at a third of the lease, so a slow call never loses it. */
  heartbeats?: boolean;
  /** Called once if the session is lost: a heartbeat refused (expired, ended elsewhere, reclaimed). */
  onLost?: (error: CubicleError) => void;
}

/** A screenshot of the session's screen, with what the api says about it. */
export interface Observation {
  png: Uint8Array;
  width: number;
  height: number;
  cursor: { x: number; y: number };
  screen: number;
  /** The focused window's title, when there is one. */
  activeWindow: string | null;
}

/** What a file write takes: text, bytes, or a stream (sent as it is read, never held whole). */
export type FileBody = string | Uint8Array | Blob | ReadableStream<Uint8Array>;

const FENCE_HEADER = "x-session-fence" as const;
const HEARTBEAT_RETRY_MS = 1_000;

/**
 * A bot's session as its holder sees it: every call carries the session's fence, heartbeats keep it
 * open until `end()`, and the tools (shell, screen, files, apps) act on its computer and screen.
 */
export class Session {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private beating: boolean;
  private lost: CubicleError | undefined;
  private record: SessionRecord;

  private constructor(
    private readonly cubicle: Cubicle,
    readonly workspaceId: string,
    record: SessionRecord,
    private readonly options: SessionOptions,
  ) {
    this.record = record;
    this.beating = options.heartbeats !== false;
    if (this.beating) this.scheduleHeartbeat();
  }

  static async open(cubicle: Cubicle, bot: Bot, options: SessionOptions = {}): Promise<Session> {
    const path = { workspaceId: bot.workspaceId, botId: bot.id };
    const record = await must(
      cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions", { params: { path } }),
    );
    return new Session(cubicle, bot.workspaceId, record, options);
  }

  static async resume(
    cubicle: Cubicle,
    path: { workspaceId: string; botId: string; sessionId: string },
    options: SessionOptions = {},
  ): Promise<Session> {
    const record = await must(
      cubicle.api.GET("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}", { params: { path } }),
    );
    return new Session(cubicle, path.workspaceId, record, { heartbeats: false, ...options });
  }

  get id() {
    return this.record.sessionId;
  }
  get botId() {
    return this.record.botId;
  }
  get computerId() {
    return this.record.computerId;
  }
  get fence() {
    return this.record.fence;
  }
  /** The screen leased to the session, or null (a computer without a free one, or none at all). */
  get screen() {
    return this.record.screen;
  }
  /** When the session expires unless it is heartbeaten. */
  get expiresAt() {
    return new Date(this.record.expiresAt);
  }

  /** Extends the session to a full lease from now. */
  async heartbeat(): Promise<void> {
    this.record = await this.heartbeaten();
  }

  private heartbeaten(): Promise<SessionRecord> {
    return must(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/heartbeat", {
        params: this.params(),
      }),
    );
  }

  /** Stops the automatic heartbeats: the session then expires a lease after the last one. */
  stopHeartbeats(): void {
    this.beating = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Ends the session with its outcome, releasing the bot and its screen. */
  async end(outcome: "success" | "failure" = "success"): Promise<SessionRecord> {
    this.stopHeartbeats();
    this.record = await must(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/end", {
        params: this.params(),
        body: { outcome },
      }),
    );
    return this.record;
  }

  /**
   * Runs a command (by `sh -c`, on the session's display, in the bot's folder), yielding its output
   * as it comes and last its `exit`. Aborting `signal` kills it; the events then end with exit 130.
   */
  async *shell(
    command: string | ShellRequest,
    { signal }: { signal?: AbortSignal } = {},
  ): AsyncGenerator<ShellEvent> {
    const body = typeof command === "string" ? { command } : command;
    let response: Response;
    try {
      response = await this.cubicle.send(
        new Request(this.toolUrl("/shell"), {
          method: "POST",
          headers: { ...this.fenceHeader(), "content-type": "application/json" },
          body: JSON.stringify(body),
          ...(signal ? { signal } : {}),
        }),
      );
    } catch (error) {
      if (!signal?.aborted) throw error;
      yield { type: "exit", code: ABORTED_EXIT, message: "aborted" };
      return;
    }
    if (!response.ok) throw await errorOf(response);
    yield* shellEvents(response, signal);
  }

  /** Runs a command to its end and returns its output and exit code. */
  run(command: string | ShellRequest, options: { signal?: AbortSignal } = {}): Promise<ShellResult> {
    return collect(this.shell(command, options));
  }

  /** A screenshot of the session's screen (PNG). */
  async observe(): Promise<Observation> {
    const { data, response } = await succeeded(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/observe", {
        params: this.params(),
        parseAs: "arrayBuffer",
      }),
    );
    const header = (name: string) => response.headers.get(name);
    const window = header("x-active-window");
    return {
      png: new Uint8Array(data as ArrayBuffer),
      width: Number(header("x-width")),
      height: Number(header("x-height")),
      cursor: { x: Number(header("x-cursor-x")), y: Number(header("x-cursor-y")) },
      screen: Number(header("x-screen")),
      activeWindow: window === null ? null : decodeURIComponent(window),
    };
  }

  /** Input actions on the screen, in order; a bad batch runs nothing (`INVALID_ACTIONS`). */
  async act(actions: DesktopAction[]): Promise<ActResult> {
    const { data } = await succeeded(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/act", {
        params: this.params(),
        body: { actions: actions as unknown as Record<string, unknown>[] },
      }),
    );
    return data as ActResult;
  }

  /** Opens a file or folder on the screen with the app the desktop picks for it. */
  async openPath(path: string) {
    const { data } = await succeeded(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/open-path", {
        params: this.params(),
        body: { path },
      }),
    );
    return data as Schemas["AppStarted"];
  }

  /** Starts the browser (at `url`) or a terminal on the session's screen. */
  async launch(app: "browser" | "terminal", url?: string) {
    const { data } = await succeeded(
      this.cubicle.api.POST("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/launch-app", {
        params: this.params(),
        body: { app, ...(url === undefined ? {} : { url }) },
      }),
    );
    return data as Schemas["AppStarted"];
  }

  /** A folder's entries (the bot's start folder by default). */
  async listFiles(path = ""): Promise<FileList> {
    const { data } = await succeeded(
      this.cubicle.api.GET("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/files", {
        params: { ...this.params(), query: { path } },
      }),
    );
    return data as FileList;
  }

  async readFile(path: string): Promise<Uint8Array> {
    const { data } = await succeeded(
      this.cubicle.api.GET("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/files/content", {
        params: { ...this.params(), query: { path } },
        parseAs: "arrayBuffer",
      }),
    );
    return new Uint8Array(data as ArrayBuffer);
  }

  async readText(path: string): Promise<string> {
    return new TextDecoder().decode(await this.readFile(path));
  }

  /** A file as a stream, read as it arrives. */
  downloadFile(path: string): Promise<ReadableStream<Uint8Array>> {
    return this.download(`/files/content?path=${encodeURIComponent(path)}`);
  }

  /** A folder as a tar stream. */
  downloadFolder(path = ""): Promise<ReadableStream<Uint8Array>> {
    return this.download(`/files/archive?path=${encodeURIComponent(path)}`);
  }

  /** Writes a file (missing folders are made); a stream is sent as it is read. */
  async writeFile(path: string, content: FileBody, { executable = false } = {}): Promise<void> {
    const query = `?path=${encodeURIComponent(path)}${executable ? "&executable=true" : ""}`;
    await this.upload(`/files/content${query}`, "application/octet-stream", content);
  }

  /** Unpacks a tar (bytes or a stream) into a folder. */
  async uploadFolder(tar: FileBody, path = ""): Promise<Upload> {
    const response = await this.upload(
      `/files/archive?path=${encodeURIComponent(path)}`,
      "application/x-tar",
      tar,
    );
    return (await response.json()) as Upload;
  }

  /** Deletes a file, link or folder (recursively). */
  async deleteFile(path: string): Promise<void> {
    await succeeded(
      this.cubicle.api.DELETE("/v1/workspaces/{workspaceId}/bots/{botId}/sessions/{sessionId}/files", {
        params: { ...this.params(), query: { path } },
      }),
    );
  }

  /**
   * A single-use capability to watch the session's screen through the screen proxy: open a
   * WebSocket to `url` offering the subprotocols `protocol` and `token` (the token never goes in a
   * URL). `control` needs the caller to hold the screen's control lease.
   */
  async screenUrl(mode: "view" | "control" = "view"): Promise<ScreenCapability> {
    if (this.screen === null) throw localError(409, "NO_SCREEN", "This session has no screen leased.");
    const ref = { workspaceId: this.workspaceId, computerId: this.computerId, screen: this.screen };
    return mintScreenCapability(this.cubicle, ref, { mode });
  }

  private params() {
    return {
      path: { workspaceId: this.workspaceId, botId: this.botId, sessionId: this.id },
      header: this.fenceHeader(),
    };
  }

  private fenceHeader(): { [FENCE_HEADER]: string } {
    return { [FENCE_HEADER]: String(this.fence) };
  }

  private toolUrl(rest: string): string {
    const { workspaceId, botId, sessionId } = this.params().path;
    return `${this.cubicle.url}/v1/workspaces/${workspaceId}/bots/${botId}/sessions/${sessionId}${rest}`;
  }

  private async download(rest: string): Promise<ReadableStream<Uint8Array>> {
    const response = await this.cubicle.send(
      new Request(this.toolUrl(rest), { headers: this.fenceHeader() }),
    );
    if (!response.ok || !response.body) throw await errorOf(response);
    return response.body;
  }

  private async upload(rest: string, contentType: string, content: FileBody): Promise<Response> {
    const streamed = content instanceof ReadableStream;
    const response = await this.cubicle.send(
      new Request(this.toolUrl(rest), {
        method: "PUT",
        headers: { ...this.fenceHeader(), "content-type": contentType },
        body: content as BodyInit,
        ...(streamed ? { duplex: "half" } : {}),
      } as RequestInit),
      { once: streamed },
    );
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  /** The next heartbeat, at a third of the lease: two may fail before the session is at risk. */
  private scheduleHeartbeat(delay = this.leaseMs() / 3): void {
    this.timer = setTimeout(async () => {
      this.timer = undefined;
      try {
        const record = await this.heartbeaten();
        // an end() while it was under way has the last word on the record
        if (this.stopped()) return;
        this.record = record;
        this.scheduleHeartbeat();
      } catch (error) {
        if (this.stopped()) return;
        if (error instanceof CubicleError && error.status < 500 && error.status !== 429) {
          this.lost = error;
          this.options.onLost?.(error);
          return;
        }
        // the api or the network was away: try again soon, while the lease still runs
        this.scheduleHeartbeat(HEARTBEAT_RETRY_MS);
      }
    }, delay);
    // a script that forgets end() still exits; its session then expires by itself
    (this.timer as { unref?: () => void }).unref?.();
  }

  private stopped() {
    return !this.beating || this.lost !== undefined || this.record.status !== "open";
  }

  private leaseMs(): number {
    return Math.max(1_000, Date.parse(this.record.expiresAt) - Date.parse(this.record.heartbeatAt));
  }
}
