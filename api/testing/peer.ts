import { request } from "node:http";

export interface PeerResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON came back and assert on it.
  json: any;
}

/**
 * An HTTP request sent from a chosen loopback address (Linux answers all of 127.0.0.0/8), so a
 * test can be two different peers to one server: a configured proxy, and anyone else.
 */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<PeerResponse> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers = { ...(body ? { "content-type": "application/json" } : {}), ...options.headers };
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: options.method ?? "GET", headers, localAddress }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown = null;
        try {
          json = text ? JSON.parse(text) : null;
        } catch {
          json = null;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** The `name=value` pairs of a response's Set-Cookie headers, as a Cookie header. */
export function cookiesOf(response: PeerResponse): string {
  const set = response.headers["set-cookie"] ?? [];
  return (Array.isArray(set) ? set : [set]).map((cookie) => cookie.split(";")[0]).join("; ");
}
