import { posix } from "node:path";
import { outsideHome, ProviderError } from "../contract/index.ts";

/** Linux's limits: NAME_MAX bytes for a name, PATH_MAX less its terminating NUL for a path. */
export const MAX_NAME_BYTES = 255;
export const MAX_PATH_BYTES = 4095;

/** A lone UTF-16 surrogate: text with no UTF-8 form. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Normalises a caller's path to one relative to the computer's home ("" is the home itself).
 * Absolute paths, `..` that climbs out, NUL bytes and backslashes are refused here, the same
 * way for every provider; providers that have a real filesystem also check symlinks.
 *
 * A path no filesystem could hold is INVALID_PATH, also here: one that is not Unicode text (each
 * layer on the way to the disk would put U+FFFD for its lone surrogates, so a file written under
 * one name would be listed under another, and two names would meet in one file), a name longer
 * than 255 bytes or a path longer than 4095 (what Linux takes; past them each backend failed in
 * its own way, a write on Docker only after the upload).
 */
export function homeRelativePath(path: string): string {
  if (path.includes("\0") || path.includes("\\") || posix.isAbsolute(path)) throw outsideHome();
  const normalised = posix.normalize(path === "" ? "." : path);
  if (normalised === ".." || normalised.startsWith("../")) throw outsideHome();
  if (LONE_SURROGATE.test(path)) throw invalidPath("a path must be Unicode text (it holds a lone surrogate)");
  if (Buffer.byteLength(path, "utf8") > MAX_PATH_BYTES) {
    throw invalidPath(`a path is at most ${MAX_PATH_BYTES} bytes`);
  }
  const relative = normalised === "." || normalised === "./" ? "" : normalised.replace(/\/+$/, "");
  if (relative.split("/").some((name) => Buffer.byteLength(name, "utf8") > MAX_NAME_BYTES)) {
    throw invalidPath(`a file or folder name is at most ${MAX_NAME_BYTES} bytes`);
  }
  return relative;
}

const invalidPath = (message: string) => new ProviderError("INVALID_PATH", message);
