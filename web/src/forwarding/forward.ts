import { apiOrigin } from "./api-origin.ts";
import { clientAddress } from "./client-address.ts";

// Hop-by-hop headers, and those the api must compute itself, are not passed along. Forwarding
// headers are what the browser claims about itself: the dashboard states the address it saw instead.
const DROPPED_REQUEST_HEADERS = [
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-port",
  "x-forwarded-proto",
  "x-real-ip",
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "expect",
  "proxy-authorization",
  "proxy-connection",
];
// The body is passed through as it streams, already decoded by fetch.
const DROPPED_RESPONSE_HEADERS = [
  "connection",
  "keep-alive",
  "transfer-encoding",
  "trailer",
  "upgrade",
  "proxy-authenticate",
  "content-encoding",
  "content-length",
];

/**
 * Forwards a browser request to the api unchanged: method, path, query, body (streamed), cookies and
 * the Origin header (the api checks it on cookie-authenticated changes). The dashboard and the api
 * so share one origin in the browser, and the session cookie never leaves it. The browser's address
 * goes along as X-Forwarded-For, which the api believes from the dashboard (TRUSTED_PROXIES).
 */
export async function forwardToApi(request: Request): Promise<Response> {
  const incoming = new URL(request.url);
  const headers = new Headers(request.headers);
  for (const name of DROPPED_REQUEST_HEADERS) headers.delete(name);
  const client = clientAddress();
  if (client) headers.set("x-forwarded-for", client);
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  let upstream: Response;
  try {
    const target = new URL(incoming.pathname + incoming.search, apiOrigin());
    upstream = await fetch(target, {
      method: request.method,
      headers,
      body: hasBody ? request.body : undefined,
      redirect: "manual",
      signal: request.signal,
      // Node's fetch needs this to send a streamed body
      ...(hasBody ? { duplex: "half" } : {}),
    } as RequestInit);
  } catch (error) {
    return unreachable(error);
  }
  const responseHeaders = new Headers();
  upstream.headers.forEach((value, name) => {
    if (name !== "set-cookie" && !DROPPED_RESPONSE_HEADERS.includes(name)) responseHeaders.set(name, value);
  });
  for (const cookie of upstream.headers.getSetCookie()) responseHeaders.append("set-cookie", cookie);
  return new Response(upstream.body, { status: upstream.status, headers: responseHeaders });
}

function unreachable(error: unknown): Response {
  const detail = `The dashboard cannot reach the Cubicle api (${error instanceof Error ? error.message : String(error)}).`;
  return Response.json(
    { type: "about:blank", title: "Bad Gateway", status: 502, code: "API_UNREACHABLE", detail },
    { status: 502, headers: { "content-type": "application/problem+json" } },
  );
}
