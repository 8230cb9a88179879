/**
 * envd's /files: GET streams a file's bytes, POST writes one (raw octet-stream body, optionally
 * gzip-encoded, or multipart/form-data with `file` parts). Bytes go straight between the HTTP
 * connection and a root helper's pipe in the sandbox, so memory stays at a chunk whatever the size.
 * Like envd, reads are done as root and written files (and the folders made for them) belong to
 * the user the request names (`username`, else `user`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import busboy from "busboy";
import { sendJson } from "../http/body.ts";
import { writePaced } from "../http/paced.ts";
import type { ContainerProcess } from "../machines/index.ts";
import { ConnectError } from "./connect.ts";
import { ENSURE_DIRS } from "./filesystem-service.ts";
import type { Sandbox } from "./sandbox.ts";
import { DEFAULT_USER, resolvePath, type SandboxUser } from "./users.ts";

/** Tells what it found on the first line, then becomes `cat`. */
const READ = `[ -e "$1" ] || { echo missing; exit 0; }
[ -d "$1" ] && { echo directory; exit 0; }
echo "size $(stat -L -c %s -- "$1")"
exec cat -- "$1"`;

/** Makes the parents and an empty file owned by $2, says "ready", then copies stdin into it. */
const WRITE = `${ENSURE_DIRS}
ensure_dirs "$(dirname -- "$1")" "$2"
[ -d "$1" ] && { echo directory; exit 0; }
: > "$1" && chown -- "$2" "$1" || exit 1
echo ready
exec cat > "$1"`;

const MAX_MULTIPART_FILES = 100;

class FilesError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function serveFiles(sandbox: Sandbox, url: URL, req: IncomingMessage, res: ServerResponse) {
  try {
    const user = await sandbox.users.get(url.searchParams.get("username") || DEFAULT_USER);
    if (req.method === "GET") await download(sandbox, user, url.searchParams.get("path") ?? "", req, res);
    else if (req.method === "POST") await upload(sandbox, user, url.searchParams.get("path"), req, res);
    else throw new FilesError(405, `${req.method} /files is not supported`);
  } catch (error) {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const status =
      error instanceof FilesError
        ? error.status
        : error instanceof ConnectError
          ? error.code === "unauthenticated"
            ? 401
            : 400
          : 500;
    sendJson(res, status, { code: status, message: error instanceof Error ? error.message : String(error) });
  }
}

async function download(
  sandbox: Sandbox,
  user: SandboxUser,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const file = resolvePath(path, user);
  const reader = await sandbox.spawn({ argv: ["/bin/sh", "-c", READ, "envd", file], user: "root", cwd: "/" });
  const found = await reader.output.line();
  if (found === "missing") throw new FilesError(404, `path '${file}' does not exist`);
  if (found === "directory") throw new FilesError(400, `path '${file}' is a directory`);
  if (!found?.startsWith("size ")) throw new FilesError(500, `could not read '${file}'`);
  // a reader the client left is stopped, rather than reading the rest of the file for nobody
  res.once("close", () => {
    if (!res.writableFinished) void sandbox.signal(reader.pid, "KILL").catch(() => undefined);
  });
  // gzip when it is the only encoding asked for (the SDK's `gzip: true`); a client that merely allows
  // it, as undici's fetch does on every request, gets identity, which HTTP always permits: envd
  // would compress there too, but on a loopback that only costs both ends CPU
  const gzip =
    String(req.headers["accept-encoding"] ?? "")
      .trim()
      .toLowerCase() === "gzip";
  const empty = found === "size 0";
  res.writeHead(200, {
    "Content-Type": "application/octet-stream",
    // the SDK reads an empty file from `Content-Length: 0`
    ...(empty && !gzip ? { "Content-Length": "0" } : {}),
    ...(gzip ? { "Content-Encoding": "gzip" } : {}),
  });
  const compressor = gzip ? createGzip() : null;
  const sink: Writable = compressor ?? res;
  // a client that leaves breaks the pipeline; copyStdout sees the compressor destroyed and stops
  const piped = compressor ? pipeline(compressor, res).catch(() => undefined) : Promise.resolve();
  const stderr = await copyStdout(reader, sink);
  if (sink.destroyed) {
    reader.detach();
    return;
  }
  // a read cut short must not end like a whole file: the client gets a broken connection instead
  if (reader.exit()?.code !== 0) {
    throw new FilesError(500, stderr || `reading '${file}' failed`);
  }
  sink.end();
  await piped;
}

/** Writes the process's stdout into `sink` at the sink's pace; its stderr's tail. */
async function copyStdout(process: ContainerProcess, sink: Writable): Promise<string> {
  let stderr = "";
  for await (const piece of process.output) {
    if (piece.stream === "stderr") {
      stderr = (stderr + piece.data.toString("utf8")).slice(-2_048);
      continue;
    }
    if (sink.destroyed) break;
    await writePaced(sink, piece.data);
  }
  return stderr.trim();
}

interface WrittenFile {
  name: string;
  type: "file";
  path: string;
}

async function upload(
  sandbox: Sandbox,
  user: SandboxUser,
  path: string | null,
  req: IncomingMessage,
  res: ServerResponse,
) {
  const mediaType =
    String(req.headers["content-type"] ?? "")
      .split(";")[0]
      ?.trim()
      .toLowerCase() ?? "";
  let written: WrittenFile[];
  if (mediaType === "application/octet-stream") {
    if (path === null) throw new FilesError(400, "path query parameter is required for raw body upload");
    const encoding = String(req.headers["content-encoding"] ?? "").toLowerCase();
    const body: Readable = encoding === "gzip" ? req.pipe(createGunzip()) : req;
    written = [await writeFile(sandbox, user, resolvePath(path, user), body)];
  } else if (mediaType.startsWith("multipart/")) {
    written = await uploadParts(sandbox, user, path, req);
  } else {
    throw new FilesError(
      400,
      `unsupported content type: ${mediaType || "none"}, expected multipart/form-data or application/octet-stream`,
    );
  }
  sendJson(res, 200, written);
}

/** Each `file` part in turn, to the `path` the query names or else the path its filename gives. */
function uploadParts(sandbox: Sandbox, user: SandboxUser, path: string | null, req: IncomingMessage) {
  return new Promise<WrittenFile[]>((resolve, reject) => {
    const written: WrittenFile[] = [];
    let writes = Promise.resolve();
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, preservePath: true, limits: { files: MAX_MULTIPART_FILES } });
    } catch (error) {
      reject(new FilesError(400, error instanceof Error ? error.message : "malformed multipart request"));
      return;
    }
    const fail = (error: unknown) => {
      req.unpipe(parser);
      req.resume();
      reject(error);
    };
    parser.on("file", (field, part, info) => {
      if (field !== "file") {
        part.resume();
        return;
      }
      // parts are written one after the other; the parser waits while a part is being written
      writes = writes.then(async () => {
        const target = resolvePath(path ?? info.filename ?? "", user);
        if (written.some((file) => file.path === target)) {
          throw new FilesError(
            400,
            `you cannot upload multiple files to the same path '${target}' in one upload request`,
          );
        }
        written.push(await writeFile(sandbox, user, target, part));
      });
      writes.catch(fail);
    });
    parser.on("close", () => writes.then(() => resolve(written), fail));
    parser.on("error", (error) =>
      fail(new FilesError(400, error instanceof Error ? error.message : String(error))),
    );
    req.pipe(parser);
  });
}

async function writeFile(
  sandbox: Sandbox,
  user: SandboxUser,
  file: string,
  body: Readable,
): Promise<WrittenFile> {
  const writer = await sandbox.spawn({
    argv: ["/bin/sh", "-c", WRITE, "envd", file, `${user.uid}:${user.gid}`],
    user: "root",
    cwd: "/",
    stdin: true,
  });
  const ready = await writer.output.line();
  if (ready !== "ready" || !writer.stdin) {
    body.resume();
    writer.detach();
    if (ready === "directory") throw new FilesError(400, `path is a directory: ${file}`);
    throw new FilesError(500, `error ensuring directories for ${file}`);
  }
  const stderr = drainStderr(writer);
  try {
    await pipeline(body, writer.stdin);
  } catch (error) {
    writer.detach();
    throw new FilesError(
      400,
      `the upload of ${file} did not complete: ${error instanceof Error ? error.message : error}`,
    );
  }
  const message = await stderr;
  if (writer.exit()?.code !== 0) throw new FilesError(500, message || `error writing file ${file}`);
  return { name: posix.basename(file), type: "file", path: file };
}

async function drainStderr(process: ContainerProcess): Promise<string> {
  let stderr = "";
  for await (const piece of process.output) stderr = (stderr + piece.data.toString("utf8")).slice(-2_048);
  return stderr.trim();
}
