/**
 * Where the dashboard's server finds the api: CUBICLE_API_URL, read when a request is forwarded
 * (not at build time), so one build serves any deployment. Parsed once per process.
 */
const DEFAULT_API_URL = "http://127.0.0.1:3100";

let parsed: URL | undefined;

export function apiOrigin(env: Record<string, string | undefined> = process.env): URL {
  if (parsed && env === process.env) return parsed;
  const raw = env.CUBICLE_API_URL?.trim() || DEFAULT_API_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`CUBICLE_API_URL is not a URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`CUBICLE_API_URL must be http(s): ${raw}`);
  if (env === process.env) parsed = url;
  return url;
}
