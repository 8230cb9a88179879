import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { type FileEntry, outsideHome, ProviderError, tooLarge } from "../contract/index.ts";
import { sanitiseHomeArchive } from "../kernel/home-archive.ts";
import { PATHS_TAR_ARGS, pathsInput, tarLeftOutUnreadable } from "../kernel/home-listing.ts";
import { homeRelativePath } from "../kernel/home-path.ts";
import { parseHomeListing } from "../kernel/home-scripts.ts";
import { shellQuote } from "../kernel/shell-quote.ts";
import { failure, type SandboxMachine } from "./machine.ts";
import type { ShellResult } from "./shell.ts";

/**
 * The home's files. Every path is resolved and used by the kernel's home-files.pl inside the
 * sandbox, as its user, one component at a time without following a link that leads out of the
 * home (the same walk as on Docker). Bytes travel through the vendor's file API, which carries them
 * as they are, to and from a private scratch file the helper reads or fills: vendors' commands
 * carry text only.
 */

const SMALL_OP_MS = 60_000;
const FILE_OP_MS = 300_000;

function verdictError(verdict: string, relative: string, maxBytes = 0): ProviderError {
  const shown = relative || ".";
  switch (verdict) {
    case "toolarge":
      return tooLarge(maxBytes);
    case "outside":
      return outsideHome();
    case "missing":
      return new ProviderError("FILE_NOT_FOUND", `no such file or folder: ${shown}`);
    case "notdir":
      return new ProviderError("NOT_A_DIRECTORY", `not a folder: ${shown}`);
    case "notfile":
      return new ProviderError("NOT_A_FILE", `not a file: ${shown}`);
    case "nospace":
      return new ProviderError("DISK_FULL", `no space left on the computer's disk to write ${shown}`);
    default:
      return new ProviderError("PROVIDER_FAILURE", `unexpected answer "${verdict}" for ${shown}`);
  }
}

/** The helper's first line, and what followed it; a helper that failed is a provider failure. */
function answer(result: ShellResult, what: string): { verdict: string; rest: string } {
  if (result.exitCode !== 0) throw failure(what, result);
  const newline = result.stdout.indexOf("\n");
  if (newline < 0) throw failure(what, result);
  return { verdict: result.stdout.slice(0, newline), rest: result.stdout.slice(newline + 1) };
}

export async function listFiles(machine: SandboxMachine, path: string): Promise<FileEntry[]> {
  const relative = homeRelativePath(path);
  const { verdict, rest } = answer(
    await machine.exec(machine.homeFilesCommand("list", relative), { timeoutMs: SMALL_OP_MS }),
    `listing ${relative || "the home"}`,
  );
  if (verdict !== "ok") throw verdictError(verdict, relative);
  return parseHomeListing(rest, relative);
}

/**
 * The real path of a command's working folder, resolved by the helper as every file operation is:
 * the vendor's own `cwd` would follow a link the shell made out of the home.
 */
export async function resolveCwd(machine: SandboxMachine, relative: string): Promise<string> {
  if (relative === "") return machine.home;
  const { verdict, rest } = answer(
    await machine.exec(machine.homeFilesCommand("cwd", relative), { timeoutMs: SMALL_OP_MS }),
    `resolving the working folder ${relative}`,
  );
  const real = rest.split("\0")[0];
  if (verdict !== "ok" || !real) throw verdictError(verdict, relative);
  return real;
}

export async function readFile(machine: SandboxMachine, path: string, maxBytes: number): Promise<Uint8Array> {
  const relative = homeRelativePath(path);
  const out = machine.scratchFile("read");
  try {
    // the verdict line is printed; the bytes go to the scratch file
    const script = `${machine.homeFilesCommand("open", relative, [String(maxBytes)])} >${shellQuote(out)} || exit $?
head -n 1 ${shellQuote(out)}`;
    const { verdict } = answer(await machine.exec(script, { timeoutMs: FILE_OP_MS }), `reading ${relative}`);
    if (verdict === "ok") throw verdictError("notfile", relative);
    const size = /^file (\d+)$/.exec(verdict)?.[1];
    if (size === undefined) throw verdictError(verdict, relative, maxBytes);
    const bytes = await machine.shell.download(out);
    const data = bytes.subarray(verdict.length + 1);
    if (data.length !== Number(size)) {
      throw new ProviderError("PROVIDER_FAILURE", `reading ${relative}: the file changed while it was read`);
    }
    return data;
  } finally {
    await machine.removeScratch(out);
  }
}

export async function writeFile(
  machine: SandboxMachine,
  path: string,
  data: Uint8Array,
  options: { executable?: boolean } = {},
): Promise<void> {
  const relative = homeRelativePath(path);
  const staged = machine.scratchFile("write");
  try {
    await machine.shell.upload(staged, data);
    // home-files.pl takes the announced size, then one more byte that proves the body ended there
    const mode = options.executable ? "0755" : "0644";
    const script = `{ cat -- ${shellQuote(staged)}; printf '\\n'; } | ${machine.homeFilesCommand("write", relative, [String(data.length), mode])}`;
    const result = await machine.exec(script, { timeoutMs: FILE_OP_MS });
    const { verdict, rest } = answer(result, `writing ${relative}`);
    if (verdict !== "ok") throw verdictError(verdict, relative);
    if (rest.trim() !== "done") throw failure(`writing ${relative}`, result);
  } finally {
    await machine.removeScratch(staged);
  }
}

export async function deleteFile(machine: SandboxMachine, path: string): Promise<void> {
  const relative = homeRelativePath(path);
  if (relative === "") throw new ProviderError("INVALID_PATH", "the home itself cannot be deleted");
  const { verdict } = answer(
    await machine.exec(machine.homeFilesCommand("delete", relative), { timeoutMs: FILE_OP_MS }),
    `deleting ${relative}`,
  );
  if (verdict !== "ok") throw verdictError(verdict, relative);
}

/** An archive the sanitiser refused (a member climbing out, a cut-short stream), in the contract's words. */
function archiveRefused(error: unknown): ProviderError {
  const said = error instanceof Error ? error.message : String(error);
  return new ProviderError("PROVIDER_FAILURE", `uploading the home archive: ${said}`, { cause: error });
}

/** Folders an import uses at the home's top while it runs; never part of an export or a listing. */
const STAGING_PREFIXES = [".cubicle-import-", ".cubicle-old-"];

/** Whether a home-relative path lies in an import's staging folder (see STAGING_PREFIXES). */
export function inStaging(path: string): boolean {
  const top = path.split("/", 1)[0] as string;
  return STAGING_PREFIXES.some((prefix) => top.startsWith(prefix));
}

/**
 * The home as a tar stream (with `paths`, only those entries, as PATHS_TAR_ARGS reads them): GNU
 * tar writes it to a scratch file in the sandbox as its user, and it is streamed from there through
 * the vendor's file API a chunk at a time (never held whole), the scratch file removed once the
 * stream ends or is cancelled. Both exports exclude the same staging folders, so an incremental
 * revision equals a whole one of the same home.
 */
export async function exportHome(
  machine: SandboxMachine,
  paths?: readonly string[],
): Promise<ReadableStream<Uint8Array>> {
  const archive = machine.scratchFile("export");
  const excluded = STAGING_PREFIXES.map((prefix) => `--exclude=${shellQuote(`./${prefix}*`)}`).join(" ");
  const tar = `tar -C ${shellQuote(machine.home)} --numeric-owner ${excluded}`;
  // 1 is GNU tar's "a file changed while it was read": the archive is still whole
  const made = paths
    ? await archivePaths(machine, tar, archive, paths)
    : await machine.exec(`${tar} -cf ${shellQuote(archive)} . || [ $? -eq 1 ]`, { timeoutMs: FILE_OP_MS });
  if (made.exitCode !== 0 || (paths && tarLeftOutUnreadable(made.stderr))) {
    await machine.removeScratch(archive);
    throw failure("archiving the home", made);
  }
  let source: ReadableStream<Uint8Array>;
  try {
    source = await machine.shell.downloadStream(archive);
  } catch (error) {
    await machine.removeScratch(archive);
    throw error;
  }
  const reader = source.getReader();
  let removed = false;
  const cleanUp = async () => {
    if (removed) return;
    removed = true;
    await machine.removeScratch(archive);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          await cleanUp();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        await cleanUp();
        controller.error(error);
      }
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => undefined);
      await cleanUp();
    },
  });
}

/**
 * tar of the named entries: vendors' commands take no input, so the NUL-separated names go up as a
 * scratch file (outside the home) that tar reads as its input and the same command removes.
 */
async function archivePaths(
  machine: SandboxMachine,
  tar: string,
  archive: string,
  paths: readonly string[],
): Promise<ShellResult> {
  const names = machine.scratchFile("paths");
  try {
    await machine.shell.upload(names, pathsInput(paths));
    const args = PATHS_TAR_ARGS.map(shellQuote).join(" ");
    return await machine.exec(
      `${tar} ${args} -cf ${shellQuote(archive)} <${shellQuote(names)}; status=$?; rm -f -- ${shellQuote(names)}; [ $status -le 1 ]`,
      { timeoutMs: FILE_OP_MS },
    );
  } catch (error) {
    await machine.removeScratch(names);
    throw error;
  }
}

/**
 * Replaces the home with the archive's contents, as on Docker: uploaded to a scratch file (the
 * upload streams), extracted by GNU tar as the sandbox's user into a staging folder inside the home
 * that home-files.pl made and entered without following links, then the browsers are closed and
 * the kernel's home-swap.sh swaps the staged contents in by renames only. An archive that does not
 * extract leaves the home and the browsers as they were.
 */
export async function importHome(machine: SandboxMachine, tar: ReadableStream<Uint8Array>): Promise<void> {
  const id = randomUUID();
  const archive = machine.scratchFile("import");
  const stage = `.cubicle-import-${id}`;
  const old = `.cubicle-old-${id}`;
  const dropStage = `rm -rf -- ${shellQuote(`${machine.home}/${stage}`)}`;
  // checked and rewritten on the way, as for Docker: a member that climbs out or an archive cut
  // short fails the upload, before anything is extracted
  let refused: unknown = null;
  const sanitised = sanitiseHomeArchive(
    Readable.fromWeb(tar as NodeReadableStream<Uint8Array>),
    machine.layout.user,
  );
  sanitised.on("error", (error) => {
    refused = error;
  });
  try {
    try {
      await machine.shell.upload(archive, Readable.toWeb(sanitised) as ReadableStream<Uint8Array>);
    } catch (error) {
      throw refused ? archiveRefused(refused) : error;
    }
    if (refused) throw archiveRefused(refused);
    const extracted = await machine.exec(
      `${machine.homeFilesCommand("untar", stage)} <${shellQuote(archive)} || { status=$?; ${dropStage}; exit $status; }`,
      { timeoutMs: FILE_OP_MS },
    );
    if (extracted.exitCode !== 0) throw failure("extracting the home archive", extracted);
    try {
      await machine.browsers("close");
    } catch (error) {
      await machine.exec(dropStage, { timeoutMs: SMALL_OP_MS }).catch(() => undefined);
      throw error;
    }
    const swapped = await machine.exec(
      ["sh", machine.program("home-swap.sh"), machine.home, stage, old].map(shellQuote).join(" "),
      { timeoutMs: FILE_OP_MS },
    );
    if (swapped.exitCode !== 0) {
      await machine.exec(dropStage, { timeoutMs: SMALL_OP_MS }).catch(() => undefined);
      throw failure("swapping in the imported home", swapped);
    }
  } finally {
    await machine.removeScratch(archive);
  }
}
