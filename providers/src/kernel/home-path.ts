import { posix } from "node:path";
import { outsideHome } from "../contract/index.ts";

/**
 * Normalises a caller's path to one relative to the computer's home ("" is the home itself).
 * Absolute paths, `..` that climbs out, NUL bytes and backslashes are refused here, the same
 * way for every provider; providers that have a real filesystem also check symlinks.
 */
export function homeRelativePath(path: string): string {
  if (path.includes("\0") || path.includes("\\") || posix.isAbsolute(path)) throw outsideHome();
  const normalised = posix.normalize(path === "" ? "." : path);
  if (normalised === ".." || normalised.startsWith("../")) throw outsideHome();
  return normalised === "." || normalised === "./" ? "" : normalised.replace(/\/+$/, "");
}
