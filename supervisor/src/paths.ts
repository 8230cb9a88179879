import { posix } from "node:path";
import { outsideHome } from "./problems.ts";

/** Where the home is mounted inside every computer. */
export const CONTAINER_HOME = "/home/cubicle";

/**
 * Normalises a caller's path to one relative to the home ("" is the home itself). Absolute paths,
 * `..` that climbs out, NUL bytes and backslashes are refused; symlinks are checked inside the
 * computer afterwards (`realpath -m`), because only it knows where they lead.
 */
export function homeRelativePath(path: string): string {
  if (path.includes("\0") || path.includes("\\") || posix.isAbsolute(path)) throw outsideHome();
  const normalised = posix.normalize(path === "" ? "." : path);
  if (normalised === ".." || normalised.startsWith("../")) throw outsideHome();
  return normalised === "." || normalised === "./" ? "" : normalised.replace(/\/+$/, "");
}

/** The absolute path inside the computer of a normalised home-relative path. */
export function containerPath(relative: string): string {
  return relative === "" ? CONTAINER_HOME : `${CONTAINER_HOME}/${relative}`;
}
