import { promises as fs } from "node:fs";
import path from "node:path";
import { SupervisorProblem } from "./problems.ts";

export const HOME_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The uid and gid of the `cubicle` user inside the computer image. */
export const COMPUTER_UID = 1000;
export const COMPUTER_GID = 1000;

export function assertHomeKey(homeKey: string): string {
  if (!HOME_KEY_PATTERN.test(homeKey)) {
    throw new SupervisorProblem(
      "INVALID_HOME_KEY",
      "a home key is 1 to 128 letters, digits, '_' or '-', starting with a letter or digit",
    );
  }
  return homeKey;
}

const inside = (root: string, candidate: string) => candidate.startsWith(root + path.sep);

/** `homesDir/<homeKey>`, refused unless it stays under homesDir (the pattern already ensures it). */
export function homePath(homesDir: string, homeKey: string): string {
  const resolved = path.resolve(homesDir, assertHomeKey(homeKey));
  if (!inside(path.resolve(homesDir), resolved)) {
    throw new SupervisorProblem(
      "INVALID_HOME_KEY",
      "the home key does not name a folder under the homes folder",
    );
  }
  return resolved;
}

function errnoOf(error: unknown): string | undefined {
  return error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

/**
 * Creates the home folder (owned by the computer's user) when missing. Its real location must stay
 * under the real homes folder: a home swapped for a symlink would bind-mount somewhere else.
 */
export async function ensureHome(
  homesDir: string,
  homeKey: string,
): Promise<{ path: string; created: boolean }> {
  const home = homePath(homesDir, homeKey);
  const unavailable = (why: string, cause?: unknown) =>
    new SupervisorProblem("HOME_UNAVAILABLE", `home ${homeKey} cannot be prepared: ${why}`, { cause });
  let created = false;
  try {
    await fs.mkdir(homesDir, { recursive: true, mode: 0o755 });
    try {
      await fs.mkdir(home, { mode: 0o750 });
      created = true;
    } catch (error) {
      if (errnoOf(error) !== "EEXIST") throw error;
    }
    const [realHomes, realHome] = await Promise.all([fs.realpath(homesDir), fs.realpath(home)]);
    if (!inside(realHomes, realHome)) throw unavailable("its folder leads outside the homes folder");
    const stats = await fs.lstat(realHome);
    if (!stats.isDirectory()) throw unavailable("it is not a folder");
    if (stats.uid !== COMPUTER_UID || stats.gid !== COMPUTER_GID) {
      await fs.chown(realHome, COMPUTER_UID, COMPUTER_GID).catch((error: unknown) => {
        throw unavailable(
          `it must be owned by uid ${COMPUTER_UID} (run the supervisor as root or as uid ${COMPUTER_UID})`,
          error,
        );
      });
    }
    return { path: realHome, created };
  } catch (error) {
    if (error instanceof SupervisorProblem) throw error;
    throw unavailable(error instanceof Error ? error.message : String(error), error);
  }
}
