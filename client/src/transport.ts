import { pause } from "./streams.ts";

/** How the client reaches the api: who it is, and how hard it tries again. */
export interface TransportOptions {
  /** An API key (`cub_…`); without one, a browser's session cookie is sent instead. */
  apiKey?: string | undefined;
  /** Another fetch (a test's, a proxy agent's); the global one by default. */
  fetch?: typeof fetch | undefined;
  /** Attempts after the first, where a retry is safe (see `send`). Default 3. */
  retries?: number | undefined;
  /** The longest `Retry-After` honoured, in ms; a longer one is answered at once. Default 30 s. */
  maxRetryDelayMs?: number | undefined;
}

/** `once`: the body is a stream the caller made, which cannot be read twice. */
export type Send = (request: Request, options?: { once?: boolean }) => Promise<Response>;

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** Answers that say a read may work on a second try: a proxy or replica briefly away. */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);
const FIRST_BACKOFF_MS = 250;

/**
 * Sends with the caller's credentials, and tries again only where that cannot do something twice:
 * a read (GET, HEAD) that failed on the network or met a transient 502 / 503 / 504, and any
 * request the api refused with 429 or 503 and a `Retry-After` (it did nothing, and says when to
 * come back). A request sent `once` (its body a stream) is never sent twice, nor is one whose
 * signal aborted. A body sent again is a clone, so a request is copied only while it may be.
 */
export function transport(options: TransportOptions): Send {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const retries = options.retries ?? 3;
  const maxDelayMs = options.maxRetryDelayMs ?? 30_000;
  return async (original, { once = false } = {}) => {
    const request = new Request(original, {
      headers: withCredentials(original.headers, options.apiKey),
      // without a key, a browser's session cookie for the dashboard's own origin does
      credentials: options.apiKey ? "omit" : "same-origin",
      // fetch would carry the key along a redirect, wherever it points; the api never redirects
      ...(options.apiKey ? { redirect: "error" as const } : {}),
    });
    const safe = SAFE_METHODS.has(request.method);
    const replayable = request.body === null || !once;
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries || !replayable || request.signal.aborted;
      const sent = last ? request : request.clone();
      let response: Response;
      try {
        response = await fetchImpl(sent);
      } catch (error) {
        if (last || !safe || request.signal.aborted) throw error;
        await pause(backoff(attempt), request.signal);
        request.signal.throwIfAborted();
        continue;
      }
      if (last) return response;
      const retryAfter = retryAfterMs(response);
      const refusedForNow = (response.status === 429 || response.status === 503) && retryAfter !== undefined;
      const transientRead = safe && TRANSIENT_STATUSES.has(response.status);
      if (!refusedForNow && !transientRead) return response;
      const wait = retryAfter ?? backoff(attempt);
      if (wait > maxDelayMs) return response;
      await response.body?.cancel();
      await pause(wait, request.signal);
      request.signal.throwIfAborted();
    }
  };
}

function withCredentials(headers: Headers, apiKey: string | undefined): Headers {
  const merged = new Headers(headers);
  if (apiKey) merged.set("x-api-key", apiKey);
  return merged;
}

const backoff = (attempt: number) => FIRST_BACKOFF_MS * 2 ** attempt;

/** `Retry-After` in seconds or as an HTTP date, in ms from now. */
function retryAfterMs(response: Response): number | undefined {
  const header = response.headers.get("retry-after");
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
