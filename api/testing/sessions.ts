import type { Database } from "@cubicle/db";
import type { Kysely } from "kysely";
import { expect } from "vitest";
import { expectStatus, type RawResponse, type TestClient } from "./harness.ts";

/** Who calls: a signed-in person, or an automation with an API key. */
export interface Caller {
  client: TestClient;
  apiKey?: string;
}

export interface OpenedSession {
  sessionId: string;
  botId: string;
  computerId: string;
  fence: number;
  screen: number | null;
  expiresAt: string;
  holder: { type: "user" | "api_key"; id: string; name: string | null };
}

let seq = 0;

/** A bot made through the bots routes by an admin or owner. */
export async function createBot(
  admin: TestClient,
  workspaceId: string,
  mode: "team" | "private" = "team",
): Promise<{ id: string; name: string; computerId: string }> {
  const name = `Bot ${++seq} ${Date.now().toString(36)}`;
  return expectStatus(
    await admin.post(`/v1/workspaces/${workspaceId}/bots`, {
      name,
      charter: {
        purpose: "works the tests",
        boundary: "never leaves the test",
        privacyReason: mode === "private" ? "keeps its files to itself" : "",
      },
      computerMode: mode,
    }),
    201,
  ).json;
}

export class SessionClient {
  constructor(
    readonly caller: Caller,
    readonly workspaceId: string,
  ) {}

  private options(fence?: number, headers: Record<string, string> = {}) {
    return {
      ...(this.caller.apiKey ? { apiKey: this.caller.apiKey } : {}),
      headers: { ...(fence === undefined ? {} : { "x-session-fence": String(fence) }), ...headers },
    };
  }

  sessionsOf = (botId: string) => `/v1/workspaces/${this.workspaceId}/bots/${botId}/sessions`;
  pathOf = (s: { botId: string; sessionId: string }, rest = "") =>
    `${this.sessionsOf(s.botId)}/${s.sessionId}${rest}`;

  open(botId: string): Promise<RawResponse> {
    return this.caller.client.post(this.sessionsOf(botId), undefined, this.options());
  }

  async opened(botId: string): Promise<OpenedSession> {
    return expectStatus(await this.open(botId), 201).json;
  }

  heartbeat(s: OpenedSession, fence = s.fence) {
    return this.caller.client.post(this.pathOf(s, "/heartbeat"), undefined, this.options(fence));
  }

  end(s: OpenedSession, outcome: "success" | "failure" = "success", fence = s.fence) {
    return this.caller.client.post(this.pathOf(s, "/end"), { outcome }, this.options(fence));
  }

  /** A tool call: POST with a JSON body, or another method without one. */
  tool(s: OpenedSession, method: string, rest: string, body?: unknown, fence = s.fence, headers = {}) {
    return this.caller.client.request(method, this.pathOf(s, rest), {
      ...this.options(fence, headers),
      body,
    });
  }

  write(s: OpenedSession, path: string, content: string, fence = s.fence) {
    return this.tool(s, "PUT", `/files/content?path=${encodeURIComponent(path)}`, content, fence, {
      "content-type": "application/octet-stream",
    });
  }

  read(s: OpenedSession, path: string, fence = s.fence) {
    return this.tool(s, "GET", `/files/content?path=${encodeURIComponent(path)}`, undefined, fence);
  }

  list(s: OpenedSession, path = "", fence = s.fence) {
    return this.tool(s, "GET", `/files?path=${encodeURIComponent(path)}`, undefined, fence);
  }

  /** Runs a command; returns its NDJSON events and their stdout, stderr and exit code. */
  async shell(s: OpenedSession, body: Record<string, unknown>, fence = s.fence) {
    const response = await this.tool(s, "POST", "/shell", body, fence);
    return { response, ...shellResult(response) };
  }

  observe(s: OpenedSession, fence = s.fence) {
    return this.caller.client.post(this.pathOf(s, "/observe"), undefined, this.options(fence));
  }

  /** The raw response, for binary bodies (screenshots, files, archives); API-key callers only. */
  raw(
    s: OpenedSession,
    method: string,
    rest: string,
    init: { body?: BodyInit | Uint8Array; headers?: Record<string, string> } = {},
  ) {
    if (!this.caller.apiKey) throw new Error("raw() is for API-key callers");
    return fetch(this.caller.client.baseUrl + this.pathOf(s, rest), {
      method,
      headers: { "x-api-key": this.caller.apiKey, "x-session-fence": String(s.fence), ...init.headers },
      ...(init.body === undefined ? {} : { body: init.body as BodyInit }),
    });
  }
}

export function shellResult(response: RawResponse) {
  if (response.status !== 200) return { events: [], stdout: "", stderr: "", exit: undefined };
  expect(response.headers.get("content-type")).toContain("application/x-ndjson");
  const events = response.text
    .split("\n")
    .filter((line) => line !== "")
    .map(
      (line) => JSON.parse(line) as { type: string; data?: string; code?: number | string; message?: string },
    );
  return {
    events,
    stdout: events.flatMap((e) => (e.type === "stdout" ? [e.data] : [])).join(""),
    stderr: events.flatMap((e) => (e.type === "stderr" ? [e.data] : [])).join(""),
    exit: events.find((e) => e.type === "exit"),
  };
}

/** Asserts a problem answer with this status and code, and returns its body. */
export function problem(response: RawResponse, status: number, code: string) {
  expect(response.status, response.text.slice(0, 400)).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/problem+json");
  expect(response.json).toMatchObject({ status, code });
  return response.json as {
    detail?: string;
    code: string;
    errors?: Array<{ path: string; message: string }>;
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Frees every bot and screen of the workspace at once, straight in the database: the sessions end
 * as failures without their end-of-session work, so that a test starts from free screens.
 */
export async function freeWorkspaceSessions(db: Kysely<Database>, workspaceId: string): Promise<void> {
  await db
    .updateTable("screen_leases")
    .set({ released_at: new Date() })
    .where("workspace_id", "=", workspaceId)
    .where("released_at", "is", null)
    .execute();
  await db
    .updateTable("execution_leases")
    .set({ status: "ended", outcome: "failure", ended_at: new Date() })
    .where("workspace_id", "=", workspaceId)
    .where("status", "=", "open")
    .execute();
}
