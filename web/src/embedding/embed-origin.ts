import { MAX_EMBED_ORIGINS, readOrigin } from "@cubicle/config/origin";

const EXAMPLE = "https://tools.example.com";

/**
 * What an admin typed, as the origin a browser sends (scheme, host, port other than the default), or
 * an Error that says how to write it. The api reads it with the same rule; asking here keeps the typing.
 */
export function readEmbedOrigin(typed: string, listed: readonly string[]): string {
  const text = typed.trim();
  if (text === "") throw new Error(`Type an origin, such as ${EXAMPLE}.`);
  const { origin, problem } = readOrigin(text);
  switch (problem) {
    case "not-a-url":
      throw new Error(
        `“${text}” is not an origin. Write it as ${EXAMPLE}: the scheme, the host and a port if any.`,
      );
    case "not-web":
      throw new Error(`“${text}” is not a web origin: it must start with https:// or http://.`);
    case "wildcard":
      throw new Error(`“${text}” has a wildcard. List each site by its own origin, such as ${EXAMPLE}.`);
    case "more-than-an-origin":
      throw new Error(
        `“${text}” is more than an origin: list ${new URL(text).origin} (no path, query or user name).`,
      );
  }
  if (listed.includes(origin)) throw new Error(`${origin} is already listed.`);
  if (listed.length >= MAX_EMBED_ORIGINS)
    throw new Error(`A workspace lists at most ${MAX_EMBED_ORIGINS} origins. Remove one first.`);
  return origin;
}
