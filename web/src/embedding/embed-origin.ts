/** The api's limit on a workspace's list. */
export const MAX_EMBED_ORIGINS = 20;

const EXAMPLE = "https://tools.example.com";

/**
 * What an admin typed, as the origin a browser sends (scheme, host, port other than the default), or
 * an Error that says how to write it. The api checks the same; asking here keeps the typing.
 */
export function readEmbedOrigin(typed: string, listed: readonly string[]): string {
  const text = typed.trim();
  if (text === "") throw new Error(`Type an origin, such as ${EXAMPLE}.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(
      `“${text}” is not an origin. Write it as ${EXAMPLE}: the scheme, the host and a port if any.`,
    );
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new Error(`“${text}” is not a web origin: it must start with https:// or http://.`);
  if (text.includes("*"))
    throw new Error(`“${text}” has a wildcard. List each site by its own origin, such as ${EXAMPLE}.`);
  if (url.username || url.password || url.search || url.hash || url.pathname !== "/")
    throw new Error(`“${text}” is more than an origin: list ${url.origin} (no path, query or user name).`);
  if (listed.includes(url.origin)) throw new Error(`${url.origin} is already listed.`);
  if (listed.length >= MAX_EMBED_ORIGINS)
    throw new Error(`A workspace lists at most ${MAX_EMBED_ORIGINS} origins. Remove one first.`);
  return url.origin;
}
