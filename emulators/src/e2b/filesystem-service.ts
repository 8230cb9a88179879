/**
 * envd's filesystem.Filesystem service (Stat, ListDir, MakeDir, Remove, Move). Like envd, which
 * runs as root, each call is a root helper in the sandbox that resolves paths for the calling user
 * and leaves what it creates owned by them.
 */
import { posix } from "node:path";
import { ConnectError } from "./connect.ts";
import { FIND_FORMAT, parseEntries } from "./entries.ts";
import type { Sandbox } from "./sandbox.ts";
import { resolvePath, type SandboxUser } from "./users.ts";

/** Exit codes the helpers use to say what went wrong. */
const MISSING = 44;
const NOT_A_DIRECTORY = 45;
const EXISTS_AS_DIRECTORY = 46;
const EXISTS_AS_FILE = 47;
const PARENT_IS_A_FILE = 48;

/**
 * envd's EnsureDirs: makes the missing directories of $1, and hands the ones it made to $2 (uid:gid).
 * Defined once and used by the helpers below (and the /files upload).
 */
export const ENSURE_DIRS = `ensure_dirs() {
  d=$1; first=
  while [ ! -e "$d" ] && [ ! -L "$d" ]; do first=$d; d=$(dirname -- "$d"); done
  [ -d "$d" ] || exit ${PARENT_IS_A_FILE}
  [ -z "$first" ] && return 0
  mkdir -p -- "$1" && chown -R -- "$2" "$first"
}`;

const STAT = `[ -e "$1" ] || [ -L "$1" ] || exit ${MISSING}
exec find "$1" -maxdepth 0 -printf "$2"`;

const LIST_DIR = `[ -e "$1" ] || exit ${MISSING}
[ -d "$1" ] || exit ${NOT_A_DIRECTORY}
exec find -H "$1" -mindepth 1 -maxdepth "$2" -printf "$3"`;

const MAKE_DIR = `${ENSURE_DIRS}
if [ -e "$1" ]; then [ -d "$1" ] && exit ${EXISTS_AS_DIRECTORY}; exit ${EXISTS_AS_FILE}; fi
ensure_dirs "$1" "$2"`;

const MOVE = `${ENSURE_DIRS}
[ -e "$1" ] || [ -L "$1" ] || exit ${MISSING}
ensure_dirs "$(dirname -- "$2")" "$3"
mv -T -- "$1" "$2" || exit 1
exec find "$2" -maxdepth 0 -printf "$4"`;

const REMOVE = `rm -rf -- "$1"`;

function helper(sandbox: Sandbox, script: string, args: string[]) {
  return sandbox.run({ argv: ["/bin/sh", "-c", script, "envd", ...args], user: "root", cwd: "/" });
}

function failure(code: number | null, stderr: string, path: string): ConnectError {
  switch (code) {
    case MISSING:
      return new ConnectError("not_found", `path '${path}' does not exist`);
    case NOT_A_DIRECTORY:
      return new ConnectError("invalid_argument", `path is not a directory: ${path}`);
    case EXISTS_AS_DIRECTORY:
      return new ConnectError("already_exists", `directory already exists: ${path}`);
    case EXISTS_AS_FILE:
      return new ConnectError("invalid_argument", `path already exists but it is not a directory: ${path}`);
    case PARENT_IS_A_FILE:
      return new ConnectError("invalid_argument", `a parent of ${path} is a file`);
    default:
      return new ConnectError(
        "internal",
        stderr || `the filesystem helper failed (exit ${code ?? "unknown"})`,
      );
  }
}

function pathField(message: Record<string, unknown>, name: string): string {
  const value = message[name] ?? "";
  if (typeof value !== "string") throw new ConnectError("invalid_argument", `${name} must be a string`);
  return value;
}

const owner = (user: SandboxUser) => `${user.uid}:${user.gid}`;

export async function filesystemCall(
  method: string,
  sandbox: Sandbox,
  user: SandboxUser,
  message: Record<string, unknown>,
): Promise<unknown> {
  switch (method) {
    case "Stat": {
      const path = resolvePath(pathField(message, "path"), user);
      const result = await helper(sandbox, STAT, [path, FIND_FORMAT]);
      if (result.code !== 0) throw failure(result.code, result.stderr, path);
      return { entry: parseEntries(result.stdout)[0] };
    }
    case "ListDir": {
      const path = resolvePath(pathField(message, "path"), user);
      const depth = typeof message.depth === "number" && message.depth > 0 ? Math.floor(message.depth) : 1;
      const result = await helper(sandbox, LIST_DIR, [path, String(depth), FIND_FORMAT]);
      if (result.code !== 0) throw failure(result.code, result.stderr, path);
      return { entries: parseEntries(result.stdout) };
    }
    case "MakeDir": {
      const path = resolvePath(pathField(message, "path"), user);
      const result = await helper(sandbox, MAKE_DIR, [path, owner(user)]);
      if (result.code !== 0) throw failure(result.code, result.stderr, path);
      return { entry: { name: posix.basename(path), type: "FILE_TYPE_DIRECTORY", path } };
    }
    case "Remove": {
      const path = resolvePath(pathField(message, "path"), user);
      const result = await helper(sandbox, REMOVE, [path]);
      if (result.code !== 0) throw failure(result.code, result.stderr, path);
      return {};
    }
    case "Move": {
      const source = resolvePath(pathField(message, "source"), user);
      const destination = resolvePath(pathField(message, "destination"), user);
      const result = await helper(sandbox, MOVE, [source, destination, owner(user), FIND_FORMAT]);
      if (result.code !== 0) throw failure(result.code, result.stderr, source);
      return { entry: parseEntries(result.stdout)[0] };
    }
    default:
      throw new ConnectError("unimplemented", `filesystem.Filesystem/${method} is not emulated`);
  }
}
