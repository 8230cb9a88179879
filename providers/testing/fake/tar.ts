import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { extract, pack } from "tar-stream";
import { ProviderError } from "../../src/contract/index.ts";
import { type Clock, type FakeDirectory, type FakeFile, newDirectory, type WalkEntry } from "./filesystem.ts";

const DIRECTORY_MODE = 0o755;
const EXECUTABLE_MODE = 0o755;
const PLAIN_MODE = 0o644;

const broken = (what: string) => new ProviderError("PROVIDER_FAILURE", what);

/**
 * A tar of `entries` (a snapshot taken by the caller) as a Web stream. With `breakAfterStart`
 * the stream errors once its first bytes went out, the way a dropped connection looks.
 */
export function packHome(entries: WalkEntry[], breakAfterStart: boolean): ReadableStream<Uint8Array> {
  const archive = pack();
  for (const { path, node } of entries) {
    if (node.kind === "directory") {
      archive.entry({ name: `${path}/`, type: "directory", mode: DIRECTORY_MODE, mtime: node.mtime });
    } else {
      archive.entry(
        { name: path, type: "file", mode: node.executable ? EXECUTABLE_MODE : PLAIN_MODE, mtime: node.mtime },
        Buffer.from(node.data.buffer, node.data.byteOffset, node.data.byteLength),
      );
    }
  }
  archive.finalize();

  const iterator = archive[Symbol.asyncIterator]();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (breakAfterStart && sent > 0) {
        archive.destroy();
        controller.error(broken("fake archive stream broke while exporting the home"));
        return;
      }
      const next = await iterator.next();
      if (next.done) {
        controller.close();
        return;
      }
      // tar-stream yields Buffers; its typings say unknown.
      const chunk = next.value instanceof Uint8Array ? new Uint8Array(next.value) : new Uint8Array(0);
      sent += chunk.length;
      controller.enqueue(chunk);
    },
    cancel() {
      archive.destroy();
    },
  });
}

/** An archive entry's name as a home-relative path; "" is the home itself. */
export function entryPath(name: string): string {
  if (name.startsWith("/") || name.includes("\0") || name.includes("\\")) {
    throw broken(`archive entry ${JSON.stringify(name)} is outside the home`);
  }
  const parts = name.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.includes("..")) throw broken(`archive entry ${JSON.stringify(name)} is outside the home`);
  return parts.join("/");
}

function place(root: FakeDirectory, path: string, node: FakeDirectory | FakeFile, clock: Clock): void {
  const parts = path.split("/");
  const name = parts.pop();
  if (name === undefined) return;
  let dir = root;
  for (const part of parts) {
    const child = dir.children.get(part);
    if (!child) {
      const made = newDirectory(clock());
      dir.children.set(part, made);
      dir = made;
    } else if (child.kind === "directory") {
      dir = child;
    } else {
      throw broken(`archive entry ${path} is inside a file`);
    }
  }
  const existing = dir.children.get(name);
  if (node.kind === "directory" && existing?.kind === "directory") {
    // A folder listed after its own contents keeps them.
    existing.mtime = node.mtime;
    return;
  }
  if (existing && existing.kind !== node.kind) throw broken(`archive entry ${path} changes type`);
  dir.children.set(name, node);
}

/**
 * Reads a whole tar into a new tree. Nothing touches the live home here: the caller swaps the
 * result in only when this resolves, so any failure leaves the old contents as they were.
 */
export async function extractTree(
  tar: ReadableStream<Uint8Array>,
  clock: Clock,
  failAfterStart: boolean,
): Promise<FakeDirectory> {
  const root = newDirectory(clock());
  const source = Readable.fromWeb(tar as NodeReadableStream<Uint8Array>);
  const parser = extract();
  source.on("error", (error) => parser.destroy(error));
  source.pipe(parser);
  try {
    for await (const entry of parser) {
      if (failAfterStart) throw broken("fake archive extraction failed while importing the home");
      const { header } = entry;
      const path = entryPath(header.name);
      const mtime = header.mtime ?? clock();
      if (header.type === "directory") {
        entry.resume();
        if (path === "") root.mtime = mtime;
        else place(root, path, { kind: "directory", children: new Map(), mtime }, clock);
      } else if (header.type === "file" || header.type === "contiguous-file") {
        const chunks: Uint8Array[] = [];
        for await (const chunk of entry) if (chunk instanceof Uint8Array) chunks.push(chunk);
        if (path === "") throw broken("archive entry names the home itself as a file");
        const executable = ((header.mode ?? PLAIN_MODE) & 0o111) !== 0;
        place(
          root,
          path,
          { kind: "file", data: new Uint8Array(Buffer.concat(chunks)), executable, mtime },
          clock,
        );
      } else {
        throw broken(
          `archive entry ${path} is a ${header.type ?? "special file"}, which the fake provider does not keep`,
        );
      }
    }
    // An empty archive has no entry to fail on; the injected failure still happens once read.
    if (failAfterStart) throw broken("fake archive extraction failed while importing the home");
  } catch (error) {
    source.destroy();
    parser.destroy();
    if (error instanceof ProviderError) throw error;
    throw new ProviderError("PROVIDER_FAILURE", "the home archive could not be read", { cause: error });
  }
  return root;
}
