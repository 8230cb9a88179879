import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { ProviderError } from "@cubicle/providers/contract";
import { copyEntry, homeRelativePath } from "@cubicle/providers/kernel";
import { extract, type Header, pack } from "tar-stream";
import { limited, tooLarge } from "../http/body.ts";
import { HttpProblem } from "../http/problem.ts";
import type { ToolSession } from "./session.ts";

/** The most one file read or written through the API may hold (larger: use the archive routes). */
export const MAX_FILE_BYTES = 32 * 1024 * 1024;
/** The most an uploaded archive may hold in all, and how many entries. */
export const MAX_UPLOAD_BYTES = 256 * 1024 * 1024;
export const MAX_UPLOAD_ENTRIES = 10_000;

/**
 * A Content-Disposition that saves the download as `name`: an ASCII-only `filename` for old
 * clients, and the name itself in `filename*` (RFC 6266), percent-encoded so no quote or
 * separator in a file's name can break the header.
 */
export function attachment(name: string): string {
  const fallback = name.replace(/[^A-Za-z0-9._-]/g, "_");
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** An archive entry's name as a relative path without `./` or a trailing slash ("" for the root). */
const entryName = (name: string) =>
  name
    .replace(/^(\.\/)+/, "")
    .replace(/\/+$/, "")
    .replace(/^\.$/, "");

/**
 * One folder of the home as a tar stream, names relative to that folder, cut from the provider's
 * export of the whole home (the contract exports homes whole). Entries are copied one at a time,
 * honouring back-pressure, so memory stays at a chunk or two.
 */
export function folderArchive(home: ReadableStream<Uint8Array>, folder: string): ReadableStream<Uint8Array> {
  const source = Readable.fromWeb(home as NodeReadableStream<Uint8Array>);
  const extractor = extract();
  const packer = pack();
  source.on("error", (error) => extractor.destroy(error));
  source.pipe(extractor);
  void (async () => {
    try {
      for await (const entry of extractor) {
        const name = entryName(entry.header.name);
        const inside = folder === "" || name === folder || name.startsWith(`${folder}/`);
        if (!inside) {
          entry.resume();
          continue;
        }
        const relative = folder === "" ? name : name.slice(folder.length + 1);
        const header: Header = {
          ...entry.header,
          name: relative === "" ? "./" : entry.header.type === "directory" ? `${relative}/` : relative,
          pax: null,
        };
        await copyEntry(packer, header, entry);
      }
      packer.finalize();
    } catch (error) {
      source.destroy();
      packer.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  })();
  return webStreamFrom(packer);
}

/** A pull-based Web stream over a (streamx) tar stream, one chunk at a time. */
function webStreamFrom(source: AsyncIterable<unknown>): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await iterator.next();
          if (next.done) controller.close();
          else if (next.value instanceof Uint8Array) controller.enqueue(next.value);
        } catch (error) {
          controller.error(error);
        }
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 1 },
  );
}

export interface UploadResult {
  files: number;
  bytes: number;
  /** Entries that are neither files nor folders (links, devices): not written. */
  skipped: number;
}

/**
 * Writes a tar's files under `folder` (home-relative) through the provider, so every path rule
 * applies to each, and all or nothing as far as the archive decides: the body is spooled to a
 * private temporary file and read through once to check every member (names inside the home,
 * sizes, count, a well-formed archive) before the second reading writes the first file. A
 * refused archive therefore changes nothing; only the provider refusing a write it alone can judge
 * (a folder in the home that is a link out of it) stops an upload part way.
 */
export async function unpackInto(
  tool: ToolSession,
  folder: string,
  body: ReadableStream<Uint8Array>,
): Promise<UploadResult> {
  const { provider, ref } = tool.machine;
  const spool = await mkdtemp(join(tmpdir(), "cubicle-upload-"));
  try {
    const archive = join(spool, "archive.tar");
    await pipeline(
      Readable.fromWeb(limited(body, MAX_UPLOAD_BYTES, "The archive") as NodeReadableStream<Uint8Array>),
      createWriteStream(archive, { mode: 0o600 }),
    ).catch((error: unknown) => {
      throw error instanceof HttpProblem ? error : invalidArchive(error);
    });
    await eachMember(archive, async () => undefined);
    return await eachMember(archive, (relative, data, executable) =>
      provider.writeFile(ref, folder === "" ? relative : posix.join(folder, relative), data, { executable }),
    );
  } finally {
    await rm(spool, { recursive: true, force: true });
  }
}

const invalidArchive = (cause: unknown) =>
  new HttpProblem(
    400,
    "INVALID_ARCHIVE",
    `The body is not a readable tar archive: ${(cause as Error).message}`,
  );

/** Reads the spooled archive, checking each member, and hands every file to `write`. */
async function eachMember(
  archive: string,
  write: (relative: string, data: Buffer, executable: boolean) => Promise<void>,
): Promise<UploadResult> {
  const extractor = extract();
  const source = createReadStream(archive);
  let failure: unknown;
  source.on("error", (error) => {
    failure = error;
    extractor.destroy(error);
  });
  source.pipe(extractor);
  const result: UploadResult = { files: 0, bytes: 0, skipped: 0 };
  let entries = 0;
  try {
    for await (const entry of extractor) {
      if (++entries > MAX_UPLOAD_ENTRIES)
        throw new HttpProblem(
          413,
          "BODY_TOO_LARGE",
          `The archive has more than ${MAX_UPLOAD_ENTRIES} entries.`,
        );
      const name = entryName(entry.header.name);
      if (entry.header.type !== "file" || name === "") {
        if (entry.header.type !== "directory") result.skipped++;
        entry.resume();
        continue;
      }
      const relative = homeRelativePath(name);
      if ((entry.header.size ?? 0) > MAX_FILE_BYTES) throw tooLarge(`Archive entry ${name}`, MAX_FILE_BYTES);
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      const data = Buffer.concat(chunks);
      await write(relative, data, ((entry.header.mode ?? 0) & 0o111) !== 0);
      result.files++;
      result.bytes += data.byteLength;
    }
  } catch (error) {
    source.destroy();
    extractor.destroy();
    const cause = failure ?? error;
    if (cause instanceof HttpProblem || cause instanceof ProviderError) throw cause;
    throw invalidArchive(cause);
  }
  return result;
}
