import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DatabaseHandle, openDatabase } from "@cubicle/db";
import { createTestDatabaseUrl, findFreePort, openTestDatabase } from "@cubicle/db/testing";
import { parseEnv } from "../src/config/env.ts";
import type { DestinationStream } from "../src/observability/logger.ts";
import { type RunningApi, startApi } from "../src/server.ts";

/** The dashboard origin the API trusts by default; cookie-authenticated changes must carry it. */
export const TRUSTED_ORIGIN = "http://127.0.0.1:3000";

/** Fresh secrets of a deployment: what its replicas (processes or not) must share. */
export const deploymentSecrets = () => ({
  BETTER_AUTH_SECRET: randomBytes(32).toString("base64url"),
  ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
  SCREEN_CAPABILITY_KEY: randomBytes(32).toString("base64url"),
});

export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON came back and assert on it.
  json: any;
}

export interface TestApi {
  api: RunningApi;
  database: DatabaseHandle;
  /** Every response body this API sent during the test file, as raw text. */
  responses: string[];
  client(): TestClient;
  close(): Promise<void>;
}

/**
 * A real API on a real port over the dialect this project runs (CUBICLE_TEST_DB): an in-memory
 * PGlite, or a fresh empty database on the run's temporary Postgres server. It logs nothing unless
 * envOverrides set LOG_LEVEL; then to stdout, or to `logDestination` (a test reading its lines).
 */
export async function startTestApi(
  envOverrides: Record<string, string> = {},
  options: { database?: DatabaseHandle; logDestination?: DestinationStream } = {},
): Promise<TestApi> {
  // Replicas of one deployment share a database (and the secrets in envOverrides); its opener closes it.
  const database = options.database ?? (await openTestDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-api-test-"));
  const env = parseEnv({
    NODE_ENV: "test",
    HOST: "127.0.0.1",
    PORT: String(await findFreePort()),
    DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    ...deploymentSecrets(),
    SANDBOX_PROVIDER: "fake",
    ...envOverrides,
  });
  const api = await startApi(env, { database, logDestination: options.logDestination });
  const responses: string[] = [];
  return {
    api,
    database,
    responses,
    client: () => new TestClient(api.url, responses),
    close: async () => {
      await api.close();
      if (!options.database) await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Replicas {
  replicas: TestApi[];
  /** Each replica's own connection to the one database. */
  databases: DatabaseHandle[];
  /** What every replica was started with (the shared secrets and `env`). */
  env: Record<string, string>;
  close(): Promise<void>;
}

/**
 * `count` api replicas of one deployment in this process, on a fresh database of the run's
 * Postgres: the same secrets and `env`, each its own connection (one after the other: at once
 * they would migrate the empty database together). Postgres only.
 */
export async function startReplicas(count: number, env: Record<string, string> = {}): Promise<Replicas> {
  const url = await createTestDatabaseUrl();
  const shared = { ...deploymentSecrets(), ...env };
  const replicas: TestApi[] = [];
  const databases: DatabaseHandle[] = [];
  const close = async () => {
    for (const replica of replicas) await replica.close();
    for (const database of databases) await database.close();
  };
  try {
    for (let i = 0; i < count; i++) {
      const database = await openDatabase({ databaseUrl: url });
      databases.push(database);
      replicas.push(await startTestApi(shared, { database }));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { replicas, databases, env: shared, close };
}

interface RequestOptions {
  body?: unknown;
  apiKey?: string;
  headers?: Record<string, string>;
}

/** An HTTP caller with its own cookie jar: a person in a browser, or an automation with a key. */
export class TestClient {
  private cookies = new Map<string, string>();
  userId = "";
  email = "";

  constructor(
    readonly baseUrl: string,
    private readonly responses: string[],
    /** The dashboard's origin, sent with cookie calls (the api checks it). */
    readonly origin = TRUSTED_ORIGIN,
  ) {}

  /** The same person (cookie jar) calling another replica of the deployment. */
  at(baseUrl: string): TestClient {
    const other = new TestClient(baseUrl, this.responses, this.origin);
    other.cookies = this.cookies;
    other.userId = this.userId;
    other.email = this.email;
    return other;
  }

  /** Bytes both ways: the body is sent as it is and the response comes back unread (archives). */
  fetch(
    method: string,
    path: string,
    init: { body?: Uint8Array; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const headers = this.headers({ ...(init.headers ? { headers: init.headers } : {}) });
    return fetch(this.baseUrl + path, {
      method,
      headers,
      ...(init.body ? { body: init.body as BodyInit } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  }

  private headers(options: RequestOptions): Headers {
    const headers = new Headers(options.headers);
    if (options.body !== undefined && !headers.has("content-type"))
      headers.set("content-type", "application/json");
    if (options.apiKey) headers.set("x-api-key", options.apiKey);
    else if (this.cookies.size > 0) {
      headers.set("cookie", [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; "));
      if (!headers.has("origin")) headers.set("origin", this.origin);
    }
    return headers;
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<RawResponse> {
    const headers = this.headers(options);
    const response = await fetch(this.baseUrl + path, {
      method,
      headers,
      body:
        options.body === undefined
          ? undefined
          : typeof options.body === "string"
            ? options.body
            : JSON.stringify(options.body),
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const [name = "", ...value] = pair.split("=");
      if (/max-age=0/i.test(cookie)) this.cookies.delete(name);
      else this.cookies.set(name, value.join("="));
    }
    const text = await bodyText(response);
    this.responses.push(text);
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: response.status, headers: response.headers, text, json };
  }

  get = (path: string, options?: RequestOptions) => this.request("GET", path, options);
  post = (path: string, body?: unknown, options?: RequestOptions) =>
    this.request("POST", path, { ...options, body });
  patch = (path: string, body?: unknown, options?: RequestOptions) =>
    this.request("PATCH", path, { ...options, body });
  put = (path: string, body?: unknown, options?: RequestOptions) =>
    this.request("PUT", path, { ...options, body });
  delete = (path: string, options?: RequestOptions) => this.request("DELETE", path, options);

  async signUp(
    email: string,
    name = email.split("@")[0] ?? "someone",
    password = "correct horse battery",
  ): Promise<RawResponse> {
    const response = await this.post("/api/auth/sign-up/email", { email, password, name });
    if (response.status === 200) {
      this.userId = response.json.user.id;
      this.email = email;
    }
    return response;
  }

  /**
   * A sign-up or sign-in as the dashboard's pages send it, with their origin (otherwise sent only
   * with cookies): what a deployment behind its dashboard sees from a browser.
   */
  fromDashboard(
    path: "/api/auth/sign-up/email" | "/api/auth/sign-in/email",
    body: Record<string, string>,
  ): Promise<RawResponse> {
    return this.post(path, body, { headers: { origin: this.origin } });
  }

  signIn(email: string, password = "correct horse battery"): Promise<RawResponse> {
    return this.post("/api/auth/sign-in/email", { email, password });
  }
}

/** The whole body; of an event stream, which does not end, its first event only. */
export async function bodyText(response: Response): Promise<string> {
  if (!response.headers.get("content-type")?.startsWith("text/event-stream") || !response.body)
    return response.text();
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let text = "";
  while (!text.includes("\n\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

/** Fails the test with the response text when the status is not the expected one. */
export function expectStatus(response: RawResponse, status: number): RawResponse {
  if (response.status !== status) {
    throw new Error(`expected HTTP ${status}, got ${response.status}: ${response.text.slice(0, 500)}`);
  }
  return response;
}
