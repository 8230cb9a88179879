import { machineStopped, ProviderError } from "../contract/index.ts";
import type { ErrorBody } from "./wire.ts";

/** How Cubicle reaches Box: the key, and the API's base URL (BOX_API_URL; an emulator's, say). */
export interface BoxConnection {
  apiKey: string;
  apiUrl?: string | undefined;
}

/** Box's own base URL; the renamed vendor's old address, which still serves the `/boxes` API. */
export const DEFAULT_BOX_API_URL = "https://ascii.dev/api/box/v1";

/** How long one request may take unless the call says otherwise. */
const REQUEST_MS = 30_000;
/** Attempts of one call while Box answers 429 or 503, and the longest wait it may ask for. */
const ATTEMPTS = 5;
const MAX_RETRY_WAIT_MS = 30_000;

export interface CallOptions {
  query?: Record<string, string>;
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** Codes with which Box refuses work on a box that is not running. */
const NOT_RUNNING = new Set(["box_starting", "box_archived"]);

/**
 * Box's REST API as one method: JSON in and out, the bearer key, bounded time per request, and
 * the retries Box asks for (429 / 503 with Retry-After). No SDK of Box's can be installed here, so
 * this is the adapter's own; fetch does the HTTP. Failures come out in Cubicle's words and never
 * carry a response body, which may hold a desktop token.
 */
export class BoxClient {
  private readonly base: string;

  constructor(private readonly connection: BoxConnection) {
    this.base = (connection.apiUrl ?? DEFAULT_BOX_API_URL).replace(/\/+$/, "");
  }

  async call<T>(what: string, method: string, path: string, options: CallOptions = {}): Promise<T> {
    const url = new URL(`${this.base}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
    const timeoutMs = options.timeoutMs ?? REQUEST_MS;
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(url, {
          method,
          headers: {
            authorization: `Bearer ${this.connection.apiKey}`,
            accept: "application/json",
            ...(options.body === undefined ? {} : { "content-type": "application/json" }),
            ...options.headers,
          },
          body: options.body === undefined ? undefined : JSON.stringify(options.body),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        const late = error instanceof Error && error.name === "TimeoutError";
        throw new ProviderError(
          "PROVIDER_FAILURE",
          late
            ? `Box did not answer within ${Math.round(timeoutMs / 1000)} s while ${what}`
            : `Box could not be reached while ${what}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      if (response.ok) return (await response.json()) as T;
      const retryIn = retryDelay(response, attempt);
      if (retryIn !== null) {
        await response.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, retryIn));
        continue;
      }
      throw refusal(what, path, response.status, await errorBody(response));
    }
  }
}

/** How long to wait before trying again, or null when this answer is final. */
function retryDelay(response: Response, attempt: number): number | null {
  if ((response.status !== 429 && response.status !== 503) || attempt >= ATTEMPTS) return null;
  const said = Number(response.headers.get("retry-after"));
  const wait = Number.isFinite(said) && said >= 0 ? said * 1000 : 500 * 2 ** (attempt - 1);
  return Math.min(wait, MAX_RETRY_WAIT_MS);
}

async function errorBody(response: Response): Promise<Partial<ErrorBody>> {
  try {
    return (await response.json()) as Partial<ErrorBody>;
  } catch {
    return {};
  }
}

function refusal(what: string, path: string, status: number, body: Partial<ErrorBody>): ProviderError {
  if (status === 401 || status === 403) {
    return new ProviderError(
      "PROVIDER_AUTH_FAILED",
      `Box refused the API key while ${what}: check BOX_API_KEY`,
    );
  }
  // a box's own address answering 404 is the one sure sign that it is gone, whatever the code says
  if (status === 404 && (body.code === "box_not_found" || /^\/boxes\/[^/]+$/.test(path))) {
    return new ProviderError("MACHINE_MISSING", `Box has no such box (while ${what})`);
  }
  if (status === 409 && body.code !== undefined && NOT_RUNNING.has(body.code)) return machineStopped();
  const busy = status === 429 || status === 503 ? " (Box is busy; try again shortly)" : "";
  const said = body.message ? `: ${body.message}` : "";
  return new ProviderError(
    "PROVIDER_FAILURE",
    `Box failed while ${what}${busy} (HTTP ${status}${body.code ? ` ${body.code}` : ""})${said}`,
  );
}
