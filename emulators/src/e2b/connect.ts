/**
 * The Connect protocol's JSON codec, as envd speaks it to the SDK (connect-web, useBinaryFormat
 * false). Written by hand: envd's .proto files are not published, and the SDK's generated
 * descriptors are bundled inside e2b without being exported, so @connectrpc/connect-node could only
 * be given the services by copying those generated files. The framing is small:
 * - unary: the request and answer are plain JSON bodies; an error is a non-200 status with
 *   `{"code","message"}`;
 * - server streaming: the request is one envelope, the answer (HTTP 200, application/connect+json)
 *   a sequence of envelopes `[flags][uint32 BE length][JSON]` ending with an end-stream envelope
 *   (flag 0x02) holding `{}` or `{"error":{"code","message"}}`.
 */
import type { ServerResponse } from "node:http";
import { writePaced } from "../http/paced.ts";

export type ConnectCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

/** The HTTP status a unary error travels with (the Connect protocol's table). */
const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

export class ConnectError extends Error {
  constructor(
    readonly code: ConnectCode,
    message: string,
  ) {
    super(message);
    this.name = "ConnectError";
  }

  toJSON(): { code: ConnectCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

const ENVELOPE_HEADER = 5;
const END_STREAM = 0x02;
const COMPRESSED = 0x01;

export function sendUnary(res: ServerResponse, message: unknown): void {
  const text = JSON.stringify(message);
  res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

export function sendUnaryError(res: ServerResponse, error: ConnectError): void {
  const text = JSON.stringify(error);
  res.writeHead(HTTP_STATUS[error.code], {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** The one message of a server-streaming request body. */
export function parseRequestEnvelope(body: Buffer): unknown {
  if (body.length < ENVELOPE_HEADER) throw new ConnectError("invalid_argument", "missing request envelope");
  const flags = body.readUInt8(0);
  const length = body.readUInt32BE(1);
  if (flags & COMPRESSED) throw new ConnectError("unimplemented", "compressed messages are not supported");
  if (body.length !== ENVELOPE_HEADER + length) {
    throw new ConnectError("invalid_argument", "the request envelope's length does not match its body");
  }
  return parseMessage(body.subarray(ENVELOPE_HEADER));
}

export function parseMessage(bytes: Buffer): unknown {
  if (bytes.length === 0) return {};
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new ConnectError("invalid_argument", "the request message is not valid JSON");
  }
}

function envelope(flags: number, message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const header = Buffer.alloc(ENVELOPE_HEADER);
  header.writeUInt8(flags, 0);
  header.writeUInt32BE(json.length, 1);
  return Buffer.concat([header, json]);
}

/**
 * One server-streaming answer. send() resolves once the client has taken the message in (or is
 * gone), so a producer awaiting it goes no faster than the client reads.
 */
export class ServerStream {
  private finished = false;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { "Content-Type": "application/connect+json" });
    // the headers go out now: the client waits for them before it reads any message
    res.flushHeaders();
  }

  /** False once the stream has ended or its client went away. */
  get open(): boolean {
    return !this.finished && !this.res.destroyed && this.res.writable;
  }

  async send(message: unknown): Promise<void> {
    if (this.open) await writePaced(this.res, envelope(0, message));
  }

  /** Ends the stream, successfully or with `error` in the end-stream message. */
  end(error?: ConnectError): void {
    if (!this.open) return;
    this.finished = true;
    this.res.end(envelope(END_STREAM, error ? { error } : {}));
  }

  /** Drops the connection without an end-stream message, as a sandbox that goes away does. */
  abort(): void {
    this.finished = true;
    this.res.destroy();
  }

  onClose(listener: () => void): void {
    this.res.once("close", listener);
  }
}
