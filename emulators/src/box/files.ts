/**
 * `GET` and `PUT /boxes/{id}/files`: one file, whole, in a JSON body (utf8 or base64), as the box's
 * user. Relative paths are in /home/user; the path, symbolic links resolved, must be under
 * /home/user or /tmp.
 */
import { posix } from "node:path";
import { BOX_USER, type Box } from "./box.ts";
import { BoxError, badRequest } from "./errors.ts";

/** Box reads files of up to 8 MiB. */
export const MAX_READ_BYTES = 8 * 1024 * 1024;
const ROOTS = [BOX_USER.home, "/tmp"];

/** Resolves $1 and says on its first line what it found; the folders Box allows are checked here too. */
const RESOLVE = `p=$(realpath -m -- "$1") || { echo invalid; exit 0; }
case "$p" in ${ROOTS.map((root) => `${root}|${root}/*`).join("|")}) ;; *) printf 'outside %s\\n' "$p"; exit 0 ;; esac`;

const READ = `${RESOLVE}
[ -e "$p" ] || { printf 'missing %s\\n' "$p"; exit 0; }
[ -d "$p" ] && { printf 'directory %s\\n' "$p"; exit 0; }
[ -r "$p" ] || { printf 'denied %s\\n' "$p"; exit 0; }
size=$(stat -L -c %s -- "$p")
[ "$size" -gt "$2" ] && { printf 'large %s\\n' "$p"; exit 0; }
printf 'file %s\\n' "$p"
exec cat -- "$p"`;

const WRITE = `${RESOLVE}
[ -d "$p" ] && { printf 'directory %s\\n' "$p"; exit 0; }
{ mkdir -p -- "$(dirname -- "$p")" && : > "$p"; } 2>/dev/null || { printf 'denied %s\\n' "$p"; exit 0; }
printf 'ready %s\\n' "$p"
exec cat > "$p"`;

type Encoding = "utf8" | "base64";

function encodingOf(value: unknown): Encoding {
  if (value === undefined || value === null || value === "") return "utf8";
  if (value === "utf8" || value === "base64") return value;
  throw badRequest("invalid_encoding", "encoding must be utf8 or base64.");
}

/** The path as asked, made absolute; refused at once when it plainly leaves Box's folders. */
function requested(value: unknown): string {
  if (typeof value !== "string" || value === "" || value.includes("\0")) {
    throw badRequest("invalid_path", "path must be a non-empty string.");
  }
  const path = posix.resolve(BOX_USER.home, value);
  if (!ROOTS.some((root) => path === root || path.startsWith(`${root}/`))) throw outside(path);
  return path;
}

const outside = (path: string) =>
  badRequest("invalid_path", `Path ${path} must resolve under ${BOX_USER.home} or /tmp.`);

/** The helper's first line as an answer: the resolved path, or the error Box gives for it. */
function verdict(first: string, expected: string): string {
  const space = first.indexOf(" ");
  const word = space === -1 ? first : first.slice(0, space);
  const path = space === -1 ? "" : first.slice(space + 1);
  if (word === expected) return path;
  if (word === "outside" || word === "invalid") throw outside(path);
  if (word === "missing") throw new BoxError(404, "file_not_found", `File ${path} not found.`);
  if (word === "directory") throw badRequest("not_a_file", `${path} is a directory.`);
  if (word === "large") {
    throw new BoxError(413, "file_too_large", `${path} is larger than ${MAX_READ_BYTES} bytes.`);
  }
  if (word === "denied") throw new BoxError(403, "permission_denied", `Permission denied: ${path}.`);
  throw new Error(`the file helper said: ${first}`);
}

export async function readFile(box: Box, query: Record<string, string>) {
  const encoding = encodingOf(query.encoding);
  const result = await box.script(READ, [requested(query.path), String(MAX_READ_BYTES)], {
    maxStdoutBytes: MAX_READ_BYTES + 8192,
  });
  const newline = result.stdout.indexOf(10);
  const first = newline === -1 ? result.stdout : result.stdout.subarray(0, newline);
  const path = verdict(first.toString("utf8"), "file");
  if (result.code !== 0) throw new Error(result.stderr || `reading ${path} failed`);
  const data = result.stdout.subarray(newline + 1);
  return {
    ok: true,
    type: "file.read",
    success: true,
    path,
    encoding,
    size: data.length,
    content: data.toString(encoding),
  };
}

export async function writeFile(box: Box, body: Record<string, unknown>) {
  const encoding = encodingOf(body.encoding);
  if (typeof body.content !== "string") throw badRequest("invalid_content", "content must be a string.");
  const data = Buffer.from(body.content, encoding);
  const writer = await box.spawn({
    argv: ["bash", "-c", WRITE, "write", requested(body.path)],
    user: BOX_USER.name,
    cwd: BOX_USER.home,
    env: { HOME: BOX_USER.home },
    stdin: true,
  });
  const first = (await writer.output.line()) ?? "";
  let path: string;
  try {
    path = verdict(first, "ready");
  } catch (error) {
    writer.detach();
    throw error;
  }
  writer.stdin?.end(data);
  let stderr = "";
  for await (const piece of writer.output) stderr = (stderr + piece.data.toString("utf8")).slice(-2048);
  if (writer.exit()?.code !== 0) throw new Error(stderr.trim() || `writing ${path} failed`);
  return { ok: true, type: "file.written", success: true, path, encoding, size: data.length };
}
