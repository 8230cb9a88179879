/**
 * What a browser sends in `Origin`, and so what every list of allowed origins must hold: a scheme
 * (http or https), a host, and a port other than the scheme's default. Nothing else: no path,
 * query, fragment, credentials or wildcard, so a listed origin means exactly one site. The api's
 * configuration, the proxy's, a workspace's embed origins and the dashboard's form all read origins
 * with this one rule (browser-safe: imported by the dashboard as `@cubicle/config/origin`).
 */
/** How many embed origins a workspace lists at most: a team's tools, not a wildcard by other means. */
export const MAX_EMBED_ORIGINS = 20;

export type OriginReading =
  | { origin: string; problem?: undefined }
  | { problem: "not-a-url" | "not-web" | "wildcard" | "more-than-an-origin"; origin?: undefined };

export function readOrigin(text: string): OriginReading {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { problem: "not-a-url" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { problem: "not-web" };
  // URL parses `*` as a host character; no browser ever sends one
  if (url.host.includes("*")) return { problem: "wildcard" };
  if (url.username || url.password || url.search || url.hash || url.pathname !== "/")
    return { problem: "more-than-an-origin" };
  return { origin: url.origin };
}

/** The origin as a browser sends it, or undefined when the text is not a bare http(s) origin. */
export const bareOrigin = (text: string): string | undefined => readOrigin(text).origin;
