import type { FileEntry } from "@cubicle/providers/contract";
import type Docker from "dockerode";
import { CONTAINER_HOME, containerPath, homeRelativePath } from "../../paths.ts";
import { outsideHome, SupervisorProblem } from "../../problems.ts";
import { collectExec } from "./exec.ts";

/**
 * Path checks and small file operations, run inside the computer as its user: only the computer
 * knows where its symlinks lead. `$1` is the operation, `$2` the normalised home-relative path.
 * The first output line is a verdict (ok, outside, missing, notdir, notfile, dir, file); what
 * follows is NUL-separated, so any file name survives.
 *
 * Paths resolve with `realpath -m` and are refused unless the result stays in the home. `delete`
 * resolves only the parent, so a symlink is removed rather than its target; `write` prepares the
 * parent folder and answers where to upload.
 */
const FILES_SCRIPT = `set -u
home=${CONTAINER_HOME}
op=$1 rel=$2
target=$home\${rel:+/$rel}
resolve() {
  r=$(realpath -m -- "$1" && echo x) || { echo outside; exit 0; }
  r=\${r%?}; r=\${r%?}
  case $r in "$home"|"$home"/*) ;; *) echo outside; exit 0 ;; esac
}
list() {
  echo ok
  find "$1" -mindepth 1 -maxdepth 1 -printf '%f\\0%y\\0%s\\0%m\\0%T@\\0'
}
if [ "$op" = delete ]; then
  resolve "$(dirname -- "$target")"
  p=$r/$(basename -- "$target")
  case $p in "$home"/*) ;; *) echo outside; exit 0 ;; esac
  [ -e "$p" ] || [ -L "$p" ] || { echo missing; exit 0; }
  rm -rf -- "$p" && echo ok
  exit
fi
resolve "$target"
p=$r
case $op in
  list)
    [ -e "$p" ] || { echo missing; exit 0; }
    [ -d "$p" ] || { echo notdir; exit 0; }
    list "$p" ;;
  open)
    [ -e "$p" ] || { echo missing; exit 0; }
    if [ -d "$p" ]; then list "$p"
    elif [ -f "$p" ]; then echo file; printf '%s\\0' "$p"
    else echo notfile; fi ;;
  cwd)
    [ -e "$p" ] || { echo missing; exit 0; }
    [ -d "$p" ] || { echo notdir; exit 0; }
    echo ok; printf '%s\\0' "$p" ;;
  write)
    [ -d "$p" ] && { echo notfile; exit 0; }
    [ -e "$p" ] && [ ! -f "$p" ] && { echo notfile; exit 0; }
    parent=$(dirname -- "$p")
    mkdir -p -- "$parent" 2>/dev/null && [ -d "$parent" ] || { echo notdir; exit 0; }
    echo ok; printf '%s\\0%s\\0' "$parent" "$(basename -- "$p")" ;;
  commit)
    mv -f -- "$3" "$4" && echo ok ;;
  discard)
    rm -f -- "$3"; echo ok ;;
esac`;

type Verdict = "ok" | "outside" | "missing" | "notdir" | "notfile" | "dir" | "file";

function problemFor(verdict: Verdict, relative: string): SupervisorProblem {
  const shown = relative || ".";
  switch (verdict) {
    case "outside":
      return outsideHome();
    case "missing":
      return new SupervisorProblem("FILE_NOT_FOUND", `no such file or folder: ${shown}`);
    case "notdir":
      return new SupervisorProblem("NOT_A_DIRECTORY", `not a folder: ${shown}`);
    case "notfile":
      return new SupervisorProblem("NOT_A_FILE", `not a file: ${shown}`);
    default:
      return new SupervisorProblem("COMPUTER_FAILURE", `unexpected answer "${verdict}" for ${shown}`);
  }
}

async function runFilesScript(
  container: Docker.Container,
  args: string[],
  relative: string,
): Promise<{ verdict: Verdict; fields: string[] }> {
  const result = await collectExec(container, ["sh", "-c", FILES_SCRIPT, "cubicle-files", ...args], {
    timeoutMs: 60_000,
    maxStdoutBytes: 32 * 1024 * 1024,
  });
  const text = result.stdout.toString("utf8");
  const newline = text.indexOf("\n");
  const verdict = (newline < 0 ? text : text.slice(0, newline)) as Verdict;
  if (result.code !== 0 || newline < 0) {
    throw new SupervisorProblem(
      "COMPUTER_FAILURE",
      `file operation on ${relative || "."} failed${result.stderr ? `: ${result.stderr}` : ""}`,
    );
  }
  const rest = text.slice(newline + 1);
  const fields = rest === "" ? [] : rest.split("\0");
  // NUL terminates every field, so the last split part is empty
  if (fields.at(-1) === "") fields.pop();
  return { verdict, fields };
}

function entriesOf(fields: string[], relative: string): FileEntry[] {
  const entries: FileEntry[] = [];
  for (let i = 0; i + 4 < fields.length; i += 5) {
    const [name = "", kind, size, mode, mtime] = fields.slice(i, i + 5);
    const type = kind === "l" ? "symlink" : kind === "d" ? "directory" : "file";
    const seconds = Number(mtime);
    entries.push({
      name,
      path: relative ? `${relative}/${name}` : name,
      type,
      size: Number(size) || 0,
      executable: type === "file" && (Number.parseInt(mode ?? "0", 8) & 0o111) !== 0,
      modifiedAt: new Date(Number.isFinite(seconds) ? seconds * 1000 : 0).toISOString(),
    });
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export type Resolved = { kind: "directory"; entries: FileEntry[] } | { kind: "file"; real: string };

/** A folder's entries, or the real path of a file, refused unless it stays in the home. */
export async function resolveForRead(
  container: Docker.Container,
  path: string,
  expect?: "file" | "directory",
): Promise<Resolved> {
  const relative = homeRelativePath(path);
  const op = expect === "directory" ? "list" : "open";
  const { verdict, fields } = await runFilesScript(container, [op, relative], relative);
  if (verdict === "ok") {
    if (expect === "file") throw problemFor("notfile", relative);
    return { kind: "directory", entries: entriesOf(fields, relative) };
  }
  if (verdict === "file") {
    const real = fields[0];
    if (!real) throw problemFor("missing", relative);
    return { kind: "file", real };
  }
  throw problemFor(verdict, relative);
}

/** The real path of a working directory in the home. */
export async function resolveCwd(container: Docker.Container, path: string | undefined): Promise<string> {
  const relative = homeRelativePath(path ?? "");
  if (relative === "") return containerPath("");
  const { verdict, fields } = await runFilesScript(container, ["cwd", relative], relative);
  const real = fields[0];
  if (verdict !== "ok" || !real) throw problemFor(verdict, relative);
  return real;
}

/** Where a file upload lands: the real parent folder (created when missing) and the final name. */
export async function prepareWrite(
  container: Docker.Container,
  path: string,
): Promise<{ parent: string; name: string }> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new SupervisorProblem("INVALID_PATH", "a file path is required");
  const { verdict, fields } = await runFilesScript(container, ["write", relative], relative);
  const [parent, name] = fields;
  if (verdict !== "ok" || !parent || !name) throw problemFor(verdict, relative);
  return { parent, name };
}

/** Renames the finished upload over the target in one step (a reader never sees half a file). */
export async function commitWrite(container: Docker.Container, from: string, to: string): Promise<void> {
  const { verdict } = await runFilesScript(container, ["commit", "", from, to], to);
  if (verdict !== "ok") throw problemFor(verdict, to);
}

export async function discardUpload(container: Docker.Container, path: string): Promise<void> {
  await runFilesScript(container, ["discard", "", path], path).catch(() => undefined);
}

export async function deletePath(container: Docker.Container, path: string): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new SupervisorProblem("INVALID_PATH", "the home itself cannot be deleted");
  const { verdict } = await runFilesScript(container, ["delete", relative], relative);
  if (verdict !== "ok") throw problemFor(verdict, relative);
}
