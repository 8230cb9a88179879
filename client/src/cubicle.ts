import createClient, { type Client } from "openapi-fetch";
import { must } from "./calls.ts";
import { type WorkspaceEvent, type WorkspaceEventsOptions, workspaceEvents } from "./events.ts";
import { localError } from "./problem.ts";
import type { components, paths } from "./schema";
import {
  type CapabilityOptions,
  ControlLease,
  mintScreenCapability,
  type ScreenCapability,
} from "./screens.ts";
import { Session, type SessionOptions } from "./session.ts";
import { type Send, type TransportOptions, transport } from "./transport.ts";

export type Schemas = components["schemas"];
export type Bot = Schemas["Bot"];
export type Computer = Schemas["Computer"];
export type Checkpoint = Schemas["Checkpoint"];
export type AuditPage = Schemas["AuditPage"];
export type AuditQuery = NonNullable<
  paths["/v1/workspaces/{workspaceId}/audit-events"]["get"]["parameters"]["query"]
>;

export interface CubicleOptions extends TransportOptions {
  /** Where the api answers (`https://cubicle.example.com`, or the dashboard's origin, which forwards). */
  url: string;
  /** The workspace to work in; by default the API key's own (or a person's only one). */
  workspaceId?: string | undefined;
}

/** The variables `fromEnv` reads. */
export interface CubicleEnv {
  CUBICLE_URL?: string | undefined;
  CUBICLE_API_KEY?: string | undefined;
  CUBICLE_WORKSPACE?: string | undefined;
}

/**
 * Cubicle's api for code: `api` is every operation of `/openapi.json`, typed; the methods here are
 * the common ones, throwing a `CubicleError` (its `code` the api's) instead of returning a problem.
 */
export class Cubicle {
  /** Every operation, typed from the api's OpenAPI document (`openapi-fetch`). */
  readonly api: Client<paths>;
  /** Sends a request the typed client cannot describe (a streamed body), with the same credentials and retries. */
  readonly send: Send;
  readonly url: string;
  private workspace: Promise<string> | undefined;

  constructor(options: CubicleOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.send = transport(options);
    this.api = createClient<paths>({ baseUrl: this.url, fetch: (request) => this.send(request) });
    if (options.workspaceId) this.workspace = Promise.resolve(options.workspaceId);
  }

  /** From `CUBICLE_URL`, `CUBICLE_API_KEY` and (optionally) `CUBICLE_WORKSPACE`. */
  static fromEnv(env: CubicleEnv = process.env, options: Partial<CubicleOptions> = {}): Cubicle {
    const url = options.url ?? env.CUBICLE_URL;
    if (!url) throw localError(400, "CUBICLE_URL_MISSING", "Set CUBICLE_URL to where Cubicle's api answers.");
    return new Cubicle({
      apiKey: env.CUBICLE_API_KEY,
      workspaceId: env.CUBICLE_WORKSPACE || undefined,
      ...options,
      url,
    });
  }

  /** The workspace this client works in: the one given, or the only one the caller sees. */
  workspaceId(): Promise<string> {
    this.workspace ??= this.onlyWorkspace().catch((error: unknown) => {
      this.workspace = undefined;
      throw error;
    });
    return this.workspace;
  }

  async listBots(): Promise<Bot[]> {
    const workspaceId = await this.workspaceId();
    const list = await must(
      this.api.GET("/v1/workspaces/{workspaceId}/bots", { params: { path: { workspaceId } } }),
    );
    return list.items;
  }

  /** A bot by its id or its exact name. */
  async bot(nameOrId: string): Promise<Bot> {
    const bots = await this.listBots();
    const found = bots.find((bot) => bot.id === nameOrId) ?? bots.find((bot) => bot.name === nameOrId);
    if (!found)
      throw localError(404, "BOT_NOT_FOUND", `No bot named or numbered "${nameOrId}" in this workspace.`);
    return found;
  }

  async listComputers(): Promise<Computer[]> {
    const workspaceId = await this.workspaceId();
    const list = await must(
      this.api.GET("/v1/workspaces/{workspaceId}/computers", { params: { path: { workspaceId } } }),
    );
    return list.items;
  }

  async startComputer(computerId: string): Promise<Computer> {
    const path = { workspaceId: await this.workspaceId(), computerId };
    return must(
      this.api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/start", { params: { path } }),
    );
  }

  async stopComputer(computerId: string): Promise<Computer> {
    const path = { workspaceId: await this.workspaceId(), computerId };
    return must(
      this.api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/stop", { params: { path } }),
    );
  }

  async listCheckpoints(computerId: string): Promise<Checkpoint[]> {
    const path = { workspaceId: await this.workspaceId(), computerId };
    const list = await must(
      this.api.GET("/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints", { params: { path } }),
    );
    return list.items;
  }

  async takeCheckpoint(computerId: string): Promise<Checkpoint> {
    const path = { workspaceId: await this.workspaceId(), computerId };
    return must(
      this.api.POST("/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints", { params: { path } }),
    );
  }

  /** Puts the computer's home back as the checkpoint has it (`fresh`: on a new machine). */
  async restoreCheckpoint(computerId: string, checkpointId: string, into: "current" | "fresh" = "current") {
    const path = { workspaceId: await this.workspaceId(), computerId, checkpointId };
    return must(
      this.api.POST(
        "/v1/workspaces/{workspaceId}/computers/{computerId}/checkpoints/{checkpointId}/restore",
        {
          params: { path },
          body: { into },
        },
      ),
    );
  }

  /** A single-use capability to open a computer's screen through the proxy (see screens.ts). */
  async screenCapability(
    computerId: string,
    { screen = 0, ...options }: CapabilityOptions & { screen?: number } = {},
  ): Promise<ScreenCapability> {
    return mintScreenCapability(this, { workspaceId: await this.workspaceId(), computerId, screen }, options);
  }

  /** Takes control of a computer's screen, to drive it or to let a page drive it. */
  async takeControl(computerId: string, screen = 0): Promise<ControlLease> {
    return ControlLease.take(this, { workspaceId: await this.workspaceId(), computerId, screen });
  }

  /** The workspace's audit trail, newest first (admins and owners). */
  async auditEvents(query: AuditQuery = {}): Promise<AuditPage> {
    const workspaceId = await this.workspaceId();
    return must(
      this.api.GET("/v1/workspaces/{workspaceId}/audit-events", { params: { path: { workspaceId }, query } }),
    );
  }

  /** The workspace's live events, reconnecting (from the last one seen) until `signal` aborts. */
  async *events(options: WorkspaceEventsOptions = {}): AsyncGenerator<WorkspaceEvent> {
    yield* workspaceEvents(this, await this.workspaceId(), options);
  }

  /**
   * Opens a session for the bot (by name or id): its computer starts, its screen is leased, and
   * heartbeats keep it until `end()`. A bot already in a session throws `ComputerBusyError`.
   */
  async openSession(bot: string, options: SessionOptions = {}): Promise<Session> {
    return Session.open(this, await this.bot(bot), options);
  }

  /**
   * A session this or another process opened, resumed by its id (its record carries its fence);
   * without heartbeats unless asked. `workspaceId`: the session's, when not this client's.
   */
  async resumeSession(
    botId: string,
    sessionId: string,
    { workspaceId, ...options }: SessionOptions & { workspaceId?: string } = {},
  ): Promise<Session> {
    return Session.resume(
      this,
      { workspaceId: workspaceId ?? (await this.workspaceId()), botId, sessionId },
      options,
    );
  }

  private async onlyWorkspace(): Promise<string> {
    const list = await must(this.api.GET("/v1/workspaces"));
    const [only, ...more] = list.items;
    if (!only) throw localError(404, "WORKSPACE_NOT_FOUND", "The caller belongs to no workspace.");
    if (more.length > 0)
      throw localError(
        400,
        "WORKSPACE_AMBIGUOUS",
        `The caller belongs to ${list.items.length} workspaces; name one (workspaceId, or CUBICLE_WORKSPACE).`,
      );
    return only.id;
  }
}
