/**
 * The toolbox's /files routes, as the sandbox user: bulk upload (multipart in, any number of
 * files, each streamed into its file with its folders made), bulk download (a multipart answer,
 * each file streamed from the sandbox), list, delete, create folder.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import busboy from "busboy";
import { sendJson } from "../http/body.ts";
import { badRequest, DaytonaHttpError } from "./errors.ts";
import { JsonStream } from "./json-stream.ts";
import type { Sandbox } from "./sandbox.ts";
import { SANDBOX_USER } from "./user.ts";

/** A path as Daytona's daemon takes it: relative ones, and `~`, are in the user's home. */
export function resolvePath(path: string): string {
  if (path.includes("\0")) throw badRequest("the path contains a NUL byte");
  const expanded = path === "~" || path.startsWith("~/") ? SANDBOX_USER.home + path.slice(1) : path;
  return posix.resolve(SANDBOX_USER.home, expanded);
}

const fileNotFound = (path: string) =>
  new DaytonaHttpError(404, `file not found: ${path}`, "FILE_NOT_FOUND", "DAYTONA_DAEMON");

/** Makes the folders, says "ready", then copies stdin into the file. */
const WRITE = `mkdir -p -- "$(dirname -- "$1")" || exit 1
[ -d "$1" ] && { echo directory; exit 0; }
: > "$1" || exit 1
echo ready
exec cat > "$1"`;

/** Says what it found on the first line, then becomes `cat`. */
const READ = `[ -e "$1" ] || { echo missing; exit 0; }
[ -d "$1" ] && { echo directory; exit 0; }
[ -r "$1" ] || { echo denied; exit 0; }
echo "size $(stat -L -c %s -- "$1")"
exec cat -- "$1"`;

const MAX_FILES = 1000;

export async function uploadFiles(sandbox: Sandbox, req: IncomingMessage, res: ServerResponse) {
  const paths = new Map<string, string>();
  await new Promise<void>((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, preservePath: true, limits: { files: MAX_FILES } });
    } catch (error) {
      reject(badRequest(error instanceof Error ? error.message : "malformed multipart request"));
      return;
    }
    let writes = Promise.resolve();
    const fail = (error: unknown) => {
      req.unpipe(parser);
      req.resume();
      reject(error);
    };
    // files[i].path comes before files[i].file; the file's own filename is its path too
    parser.on("field", (name, value) => {
      const index = /^files\[(\d+)\]\.path$/.exec(name)?.[1];
      if (index !== undefined) paths.set(index, value);
    });
    parser.on("file", (name, part, info) => {
      const index = /^files\[(\d+)\]\.file$/.exec(name)?.[1];
      const path = (index !== undefined ? paths.get(index) : undefined) ?? info.filename;
      if (!path) {
        part.resume();
        return;
      }
      // one file after the other; the parser waits while a part is written
      writes = writes.then(() => writeFile(sandbox, resolvePath(path), part));
      writes.catch(fail);
    });
    parser.on("close", () => writes.then(() => resolve(), fail));
    parser.on("error", (error) => fail(badRequest(error instanceof Error ? error.message : String(error))));
    req.pipe(parser);
  });
  sendJson(res, 200, {});
}

async function writeFile(sandbox: Sandbox, file: string, body: Readable): Promise<void> {
  const writer = await sandbox.spawn({
    argv: ["sh", "-c", WRITE, "upload", file],
    user: SANDBOX_USER.name,
    cwd: SANDBOX_USER.home,
    stdin: true,
  });
  const ready = await writer.output.line();
  if (ready !== "ready" || !writer.stdin) {
    body.resume();
    writer.detach();
    if (ready === "directory") throw badRequest(`path is a directory: ${file}`);
    throw new DaytonaHttpError(403, `cannot write ${file}`, "FILE_ACCESS_DENIED", "DAYTONA_DAEMON");
  }
  let stderr = "";
  const drained = (async () => {
    for await (const piece of writer.output) stderr = (stderr + piece.data.toString("utf8")).slice(-2048);
  })();
  try {
    await pipeline(body, writer.stdin);
  } catch (error) {
    writer.detach();
    throw badRequest(
      `the upload of ${file} did not complete: ${error instanceof Error ? error.message : error}`,
    );
  }
  await drained;
  if (writer.exit()?.code !== 0) {
    throw new DaytonaHttpError(500, stderr.trim() || `error writing ${file}`, "INTERNAL_SERVER_ERROR");
  }
}

/** The answer is multipart: per path a `file` part (filename = the path as asked) or an `error` part. */
export async function downloadFiles(sandbox: Sandbox, body: Record<string, unknown>, res: ServerResponse) {
  const paths = Array.isArray(body.paths) ? body.paths.filter((path) => typeof path === "string") : [];
  if (paths.length === 0) throw badRequest("paths must name at least one file");
  const boundary = randomBytes(16).toString("hex");
  const answer = new JsonStream(res);
  res.writeHead(200, { "Content-Type": `multipart/form-data; boundary=${boundary}` });
  for (const path of paths) {
    const filename = path.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
    const reader = await sandbox.spawn({
      argv: ["sh", "-c", READ, "download", resolvePath(path)],
      user: SANDBOX_USER.name,
      cwd: SANDBOX_USER.home,
    });
    const found = (await reader.output.line()) ?? "";
    if (!found.startsWith("size ")) {
      reader.detach();
      const [status, code, message] =
        found === "missing"
          ? [404, "FILE_NOT_FOUND", `file not found: ${path}`]
          : found === "directory"
            ? [400, "INVALID_FILE_PATH", `path is a directory: ${path}`]
            : [403, "FILE_ACCESS_DENIED", `permission denied: ${path}`];
      const error = JSON.stringify({ message, statusCode: status, code, source: "DAYTONA_DAEMON" });
      await answer.raw(
        `--${boundary}\r\nContent-Disposition: form-data; name="error"; filename="${filename}"\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(error)}\r\n\r\n${error}\r\n`,
      );
      continue;
    }
    await answer.raw(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: ${found.slice(5)}\r\n\r\n`,
    );
    for await (const piece of reader.output) if (piece.stream === "stdout") await answer.bytes(piece.data);
    // a read cut short must not end like a whole file: the client gets a broken connection instead
    if (reader.exit()?.code !== 0) throw new Error(`reading ${path} failed`);
    await answer.raw("\r\n");
  }
  await answer.raw(`--${boundary}--\r\n`);
  answer.end();
}

export async function listFiles(sandbox: Sandbox, path: string) {
  const dir = resolvePath(path || SANDBOX_USER.home);
  const result = await sandbox.script(
    `[ -e "$1" ] || { echo missing; exit 0; }; [ -d "$1" ] || { echo file; exit 0; }; echo ok
find "$1" -mindepth 1 -maxdepth 1 -printf '%f\\0%y\\0%s\\0%m\\0%M\\0%u\\0%g\\0%T@\\0'`,
    [dir],
    { maxStdoutBytes: 64 * 1024 * 1024 },
  );
  const text = result.stdout.toString("utf8");
  const newline = text.indexOf("\n");
  const found = text.slice(0, newline);
  if (found === "missing") throw fileNotFound(dir);
  if (found !== "ok") throw badRequest(`not a directory: ${dir}`);
  const fields = text.slice(newline + 1).split("\0");
  const files = [];
  for (let at = 0; at + 8 <= fields.length; at += 8) {
    const [name = "", type, size, permissions = "", mode, owner, group, seconds] = fields.slice(at, at + 8);
    const modified = new Date(Number(seconds) * 1000).toISOString();
    files.push({
      name,
      isDir: type === "d",
      size: Number(size),
      mode,
      permissions: permissions.padStart(4, "0"),
      owner,
      group,
      modTime: modified,
      modifiedAt: modified,
    });
  }
  return files;
}

export async function deleteFile(sandbox: Sandbox, path: string, recursive: boolean) {
  const file = resolvePath(path);
  const result = await sandbox.script(
    `[ -e "$1" ] || [ -L "$1" ] || { echo missing; exit 0; }
if [ -d "$1" ] && [ "$2" != true ]; then echo directory; exit 0; fi
rm -rf -- "$1" && echo ok`,
    [file, String(recursive)],
  );
  const found = result.stdout.toString("utf8").trim();
  if (found === "missing") throw fileNotFound(file);
  if (found === "directory") throw badRequest(`cannot delete directory ${file} without recursive`);
  if (found !== "ok")
    throw new DaytonaHttpError(
      403,
      result.stderr || `cannot delete ${file}`,
      "FILE_ACCESS_DENIED",
      "DAYTONA_DAEMON",
    );
}

export async function createFolder(sandbox: Sandbox, path: string, mode: string) {
  const dir = resolvePath(path);
  if (!/^[0-7]{3,4}$/.test(mode)) throw badRequest(`invalid mode: ${mode}`);
  const result = await sandbox.script('mkdir -p -m "$2" -- "$1"', [dir, mode]);
  if (result.code !== 0) throw badRequest(result.stderr || `cannot create ${dir}`);
}
