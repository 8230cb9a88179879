import type { MiddlewareHandler } from "hono";
import { HttpProblem } from "./problem.ts";

/** The most a JSON body may hold: every JSON field of the API fits many times over. */
export const MAX_JSON_BYTES = 1024 * 1024;

export const tooLarge = (what: string, max: number) =>
  new HttpProblem(413, "BODY_TOO_LARGE", `${what} exceeds ${max} bytes.`);

/** Passes a request body through, failing it (413) once more than `max` bytes came. */
export function limited(
  body: ReadableStream<Uint8Array>,
  max: number,
  what: string,
): ReadableStream<Uint8Array> {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > max) controller.error(tooLarge(what, max));
        else controller.enqueue(chunk);
      },
    }),
  );
}

/** The whole request body, refused (413) past `max` bytes without reading further. */
export async function readBody(request: Request, max: number, what: string): Promise<Uint8Array> {
  const announced = Number(request.headers.get("content-length") ?? Number.NaN);
  if (announced > max) throw tooLarge(what, max);
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(what, max);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** As Hono's validator tells JSON apart: application/json and any +json type. */
const JSON_TYPE = /^application\/([a-z-.]+\+)?json(\s*;|$)/i;
/** NUL, which Postgres cannot store in text, and UTF-16 halves that encode no character. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const unstorable = (text: string) => text.includes("\u0000") || LONE_SURROGATE.test(text);

const badText = (detail: string) => new HttpProblem(400, "INVALID_TEXT", detail);

/**
 * Text the API would otherwise store changed or fail on, refused up front for every route (Better
 * Auth's too): a JSON body past MAX_JSON_BYTES (413, before it is held in memory), or one that is
 * not UTF-8 (decoders put U+FFFD in its place and the name is saved altered), and NUL or unpaired
 * surrogates in a body's strings or in the URL (Postgres refuses NUL, which answered 500; a lone
 * surrogate is saved as U+FFFD). Malformed JSON is left to the route, which says where.
 */
export function wellFormedText(): MiddlewareHandler {
  return async (c, next) => {
    if (/%00/i.test(c.req.url)) throw badText("The URL contains a NUL character.");
    const type = c.req.header("content-type");
    if (c.req.method === "GET" || c.req.method === "HEAD" || !type || !JSON_TYPE.test(type)) return next();
    const request = c.req.raw;
    const bytes = await readBody(request, MAX_JSON_BYTES, "A JSON body");
    // The same request again with the bytes read, for the route's validator and Better Auth. (Not
    // a clone: cancelling one branch of a tee past the limit never settles while the other is unread.)
    c.req.raw = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      body: bytes as BodyInit,
      signal: request.signal,
    });
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      throw badText("The body is not valid UTF-8.");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return next();
    }
    if (holdsUnstorable(parsed))
      throw badText("The body contains a NUL character or an unpaired UTF-16 surrogate.");
    return next();
  };
}

/** Walked with a stack of its own: a body nested thousands deep must not overflow the call stack. */
function holdsUnstorable(value: unknown): boolean {
  const pending = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (unstorable(item)) return true;
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item)) {
        if (unstorable(key)) return true;
        pending.push(child);
      }
    }
  }
  return false;
}
