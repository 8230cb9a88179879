import type { IncomingMessage, ServerResponse } from "node:http";

/** JSON request bodies larger than this are refused rather than read. */
const MAX_JSON_BODY = 1024 * 1024;

/** The request's body could not be used: too large, malformed, or the client went away. */
export class BadBody extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadBody";
  }
}

/** The request's body is larger than the route takes. */
export class BodyTooLarge extends BadBody {
  constructor(maxBytes: number) {
    super(`the request body is larger than ${maxBytes} bytes`);
    this.name = "BodyTooLarge";
  }
}

/** The whole body, refused past `maxBytes`. */
export async function readBody(req: IncomingMessage, maxBytes = MAX_JSON_BODY): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > maxBytes) throw new BodyTooLarge(maxBytes);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof BadBody) throw error;
    throw new BadBody("the request body could not be read");
  }
  return Buffer.concat(chunks);
}

/** The body parsed as a JSON object; an empty body is `{}`. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  return parseJsonObject(await readBody(req));
}

/** `bytes` parsed as a JSON object; no bytes are `{}`. */
export function parseJsonObject(bytes: Buffer): Record<string, unknown> {
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new BadBody("the request body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new BadBody("the request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}
