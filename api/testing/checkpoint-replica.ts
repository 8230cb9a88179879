/**
 * One api replica's checkpoint store, in a process of its own, for checkpoints.replicas.postgres.test.ts:
 * the store the api builds (sealed, with the replicas' Postgres lock) on a shared CHECKPOINT_DIR.
 * It takes one JSON request a line on stdin and answers each on stdout with the same `id`.
 *
 *     {id, op: "write", homeKey, files: [{path, seed, size}], pauseInside?}   → {id, revision}
 *     {id, op: "resume"}                       lets a write paused inside `pauseInside` go on
 *     {id, op: "remove", homeKey, ids}  {id, op: "gc"}                          → {id}
 *
 * With `pauseInside`, the home's archive stops half-way through that file and says
 * {event: "paused"}: every file before it has been stored or found already stored, and the
 * revision naming them is not written yet. That is the moment a collection elsewhere must not
 * delete what the write counts on. Usage: node --import tsx checkpoint-replica.ts <root> <databaseUrl> <key>
 */
import { createInterface } from "node:readline";
import { openDatabase } from "@cubicle/db";
import { pack } from "tar-stream";
import { replicaStoreLock } from "../src/checkpoints/replica-lock.ts";
import { createCheckpointSealing, createFileCheckpointStore } from "../src/checkpoints/store/index.ts";
import { pseudoRandomBytes } from "../src/checkpoints/store/testing/homes.ts";

const REPLICA_WORKSPACE = "ws-replicas";
const CHUNK = 64 * 1024;

export interface ReplicaFile {
  path: string;
  seed: number;
  size: number;
}

const [root, databaseUrl, key] = process.argv.slice(2);
if (root && databaseUrl && key) await serve(root, databaseUrl, key);

async function serve(root: string, databaseUrl: string, key: string): Promise<void> {
  const database = await openDatabase({ databaseUrl });
  const store = createFileCheckpointStore(root, {
    sealing: createCheckpointSealing({ current: key, previous: [] }),
    lock: replicaStoreLock(database),
  });
  let resume: (() => void) | null = null;
  const answer = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

  const archive = (files: ReplicaFile[], pauseInside?: string) => {
    const tar = pack();
    void (async () => {
      for (const file of files) {
        const content = pseudoRandomBytes(file.size, file.seed);
        const sink = tar.entry({ name: `./${file.path}`, size: file.size, mode: 0o644 });
        for (let offset = 0; offset < content.length; offset += CHUNK) {
          if (file.path === pauseInside && offset >= content.length / 2 && resume === null) {
            const resumed = new Promise<void>((done) => {
              resume = done;
            });
            answer({ event: "paused" });
            await resumed;
          }
          if (!sink.write(content.subarray(offset, offset + CHUNK)))
            await new Promise<void>((drained) => sink.once("drain", () => drained()));
        }
        sink.end(null);
      }
      tar.finalize();
    })();
    // pulled, so the archive goes only as far as the store has read it
    const chunks = tar[Symbol.asyncIterator]();
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(new Uint8Array(next.value as Buffer));
      },
    });
  };

  for await (const line of createInterface({ input: process.stdin })) {
    const request = JSON.parse(line);
    const run = async () => {
      switch (request.op) {
        case "write":
          return {
            revision: await store.write({
              workspaceId: REPLICA_WORKSPACE,
              homeKey: request.homeKey,
              parentId: null,
              reason: "manual",
              tar: archive(request.files, request.pauseInside),
            }),
          };
        case "resume":
          resume?.();
          return {};
        case "remove":
          await store.remove(request.homeKey, request.ids);
          return {};
        case "gc":
          return await store.collectGarbage();
        default:
          throw new Error(`unknown op ${request.op}`);
      }
    };
    // requests run concurrently, as a replica's checkpoints and collections do
    run().then(
      (result) => answer({ id: request.id, ...result }),
      (error: unknown) => answer({ id: request.id, error: String(error) }),
    );
  }
  await database.close();
}
