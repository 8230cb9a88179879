import { connect } from "node:net";

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/**
 * One request written byte for byte on its own connection, for what fetch will not send (a header
 * given twice, two Content-Lengths, a header past Node's limit); rejects after `timeoutMs` so a
 * request the server never answers fails the case instead of hanging it.
 */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: readonly (readonly [string, string])[],
  body: Buffer = Buffer.alloc(0),
  timeoutMs = 10_000,
): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  const head = [
    `${method} ${path} HTTP/1.1`,
    `Host: ${url.host}`,
    "Connection: close",
    ...headers.map(([name, value]) => `${name}: ${value}`),
  ].join("\r\n");
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to ${method} ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (chunk) => chunks.push(chunk));
    // The server may close while the body is still being written (it answered already): keep what came.
    socket.on("error", () => socket.destroy());
    socket.on("close", () => {
      clearTimeout(timer);
      const answer = parse(Buffer.concat(chunks));
      if (answer) resolve(answer);
      else reject(new Error(`no HTTP answer to ${method} ${path}`));
    });
    // Not end(): Node's server drops a request whose client half-closes before the answer.
    socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`, "latin1"), body]));
  });
}

function parse(bytes: Buffer): RawAnswer | undefined {
  const end = bytes.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = bytes.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(statusLine.split(" ")[1]);
  const headers = new Map(
    lines.map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()] as const;
    }),
  );
  let body = bytes.subarray(end + 4);
  if (headers.get("transfer-encoding") === "chunked") body = unchunk(body);
  return { status, headers, body: body.toString("utf8") };
}

function unchunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", at);
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString("latin1"), 16);
    if (lineEnd < 0 || !(size > 0)) return Buffer.concat(parts);
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}
