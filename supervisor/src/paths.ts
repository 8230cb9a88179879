import { ProviderError } from "@cubicle/providers/contract";
import { homeRelativePath as providersHomeRelativePath } from "@cubicle/providers/kernel";
import { SupervisorProblem } from "./problems.ts";

/** Where the home is mounted inside every computer. */
export const CONTAINER_HOME = "/home/cubicle";

/**
 * Normalises a caller's path to one relative to the home ("" is the home itself), by the one rule
 * every provider uses (the kernel's homeRelativePath: absolute paths, `..` that climbs out, NUL
 * bytes and backslashes are outside the home; a path no filesystem could hold is invalid), in the
 * supervisor's problems; symlinks are checked inside the computer afterwards, because only it
 * knows where they lead.
 */
export function homeRelativePath(path: string): string {
  try {
    return providersHomeRelativePath(path);
  } catch (error) {
    if (
      error instanceof ProviderError &&
      (error.code === "PATH_OUTSIDE_HOME" || error.code === "INVALID_PATH")
    ) {
      throw new SupervisorProblem(error.code, error.message);
    }
    throw error;
  }
}

/** The absolute path inside the computer of a normalised home-relative path. */
export function containerPath(relative: string): string {
  return relative === "" ? CONTAINER_HOME : `${CONTAINER_HOME}/${relative}`;
}
