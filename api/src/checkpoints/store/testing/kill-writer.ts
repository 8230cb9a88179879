/**
 * Child process for the kill -9 test: starts writing a large revision (a generated tar, fed
 * slowly) and says "writing" on stdout once a good part of it is in, so the test can SIGKILL it
 * mid-write. Usage: node --import tsx kill-writer.ts <storeRoot> <homeKey> <parentId>
 */
import { createFileCheckpointStore } from "../file-store.ts";
import { createCheckpointSealing } from "../sealing.ts";
import { pseudoRandomBytes, TEST_ENCRYPTION_KEYS } from "./homes.ts";

const [root, homeKey, parentId] = process.argv.slice(2);
if (!root || !homeKey || !parentId) throw new Error("usage: kill-writer.ts <storeRoot> <homeKey> <parentId>");

const FILES = 400;
const FILE_BYTES = 2 * 1024 * 1024;

/** A ustar header for a plain file. */
function fileHeader(name: string, size: number): Uint8Array {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) =>
    header.write(value, offset, length, "ascii");
  const octal = (offset: number, length: number, value: number) =>
    field(offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
  field(0, 100, name);
  octal(100, 8, 0o644);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, Math.floor(Date.now() / 1000));
  field(148, 8, "        ");
  field(156, 1, "0");
  field(257, 6, "ustar\0");
  field(263, 2, "00");
  let sum = 0;
  for (const byte of header) sum += byte;
  field(148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return header;
}

async function* archive(): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < FILES; i += 1) {
    yield fileHeader(`./big/file-${i}.bin`, FILE_BYTES);
    yield pseudoRandomBytes(FILE_BYTES, 7_000 + i);
    if (i === 20) process.stdout.write("writing\n");
    if (i > 20) await new Promise((done) => setTimeout(done, 20));
  }
  yield new Uint8Array(1024);
}

const source = archive();
const tar = new ReadableStream<Uint8Array>({
  async pull(controller) {
    const next = await source.next();
    if (next.done) controller.close();
    else controller.enqueue(next.value);
  },
});

const store = createFileCheckpointStore(root, { sealing: createCheckpointSealing(TEST_ENCRYPTION_KEYS) });
await store.write({ workspaceId: "ws-1", homeKey, parentId, reason: "manual", tar });
process.stdout.write("finished\n");
