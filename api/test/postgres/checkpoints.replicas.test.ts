import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { fileURLToPath } from "node:url";
import { type DatabaseHandle, openDatabase } from "@cubicle/db";
import { createTestDatabaseUrl } from "@cubicle/db/testing";
import { sql } from "kysely";
import { extract } from "tar-stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createCheckpointSealing,
  createFileCheckpointStore,
  type RevisionInfo,
} from "../../src/checkpoints/store/index.ts";
import { pseudoRandomBytes } from "../../src/checkpoints/store/testing/homes.ts";
import type { ReplicaFile } from "../../testing/checkpoint-replica.ts";

/**
 * Two api replicas share CHECKPOINT_DIR and one Postgres (docs/architecture.md, "Scale"): each
 * writes checkpoints and collects garbage while the other does, and every revision either kept
 * restores byte for byte. Each replica's store runs in a process of its own, as replicas do, so
 * nothing but what they share (the folder and the database) keeps them apart.
 */
const here = dirname(fileURLToPath(import.meta.url));
const KEY = randomBytes(32).toString("base64url");

class Replica {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting = new Map<number, { done: (value: Record<string, unknown>) => void }>();
  private next = 0;
  private stderr = "";
  private onPaused: (() => void) | null = null;

  constructor(root: string, databaseUrl: string) {
    this.child = spawn(
      process.execPath,
      ["--import", "tsx", join(here, "..", "..", "testing", "checkpoint-replica.ts"), root, databaseUrl, KEY],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const message = JSON.parse(line);
      if (message.event === "paused") this.onPaused?.();
      else this.waiting.get(message.id)?.done(message);
    });
  }

  request(op: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, {
        done: (message) => {
          this.waiting.delete(id);
          if (message.error) reject(new Error(`${op} failed on a replica: ${message.error}`));
          else resolve(message);
        },
      });
      this.child.stdin.write(`${JSON.stringify({ id, op, ...fields })}\n`);
    });
  }

  async write(homeKey: string, files: ReplicaFile[], pauseInside?: string): Promise<RevisionInfo> {
    const { revision } = await this.request("write", { homeKey, files, pauseInside });
    return revision as RevisionInfo;
  }

  /** Starts a write that stops half-way through `pauseInside`; resolves once it has. */
  async writePaused(homeKey: string, files: ReplicaFile[], pauseInside: string) {
    const paused = new Promise<void>((done) => {
      this.onPaused = done;
    });
    const written = this.write(homeKey, files, pauseInside);
    written.catch(() => undefined);
    await Promise.race([paused, written]);
    return { written, resume: () => this.request("resume") };
  }

  remove(homeKey: string, ids: string[]) {
    return this.request("remove", { homeKey, ids });
  }

  gc() {
    return this.request("gc");
  }

  close(): Promise<void> {
    const exited = new Promise<void>((done) => this.child.once("exit", () => done()));
    this.child.stdin.end();
    return exited;
  }

  get errors(): string {
    return this.stderr;
  }
}

let databaseUrl: string;
let database: DatabaseHandle;
let work: string;
let root: string;
let replicas: Replica[] = [];

beforeAll(async () => {
  databaseUrl = await createTestDatabaseUrl();
  database = await openDatabase({ databaseUrl });
});

afterAll(async () => {
  await database?.close();
});

beforeEach(async () => {
  work = await fs.mkdtemp(join(tmpdir(), "cubicle-checkpoint-replicas-"));
  root = join(work, "store");
  replicas = [new Replica(root, databaseUrl), new Replica(root, databaseUrl)];
  return async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await fs.rm(work, { recursive: true, force: true });
  };
});

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** What a revision of these files must restore to: each path's content hash. */
const expected = (files: ReplicaFile[]) =>
  new Map(files.map((file) => [file.path, sha256(pseudoRandomBytes(file.size, file.seed))]));

/** Reads a revision back through a store of its own, as a restore on any replica would. */
async function restored(homeKey: string, id: string): Promise<Map<string, string>> {
  const store = createFileCheckpointStore(root, {
    sealing: createCheckpointSealing({ current: KEY, previous: [] }),
  });
  const parser = extract();
  const source = Readable.fromWeb((await store.read(homeKey, id)) as NodeReadableStream<Uint8Array>);
  source.on("error", (error) => parser.destroy(error));
  source.pipe(parser);
  const files = new Map<string, string>();
  for await (const entry of parser) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    if (entry.header.type === "file")
      files.set(entry.header.name.replace(/^\.\//, ""), sha256(Buffer.concat(chunks)));
  }
  return files;
}

/** Makes every stored object look written an hour ago: long-stored content, which is what a sweep may take. */
async function ageObjects(): Promise<void> {
  const hourAgo = new Date(Date.now() - 60 * 60 * 1000);
  const objects = join(root, "objects");
  for (const name of await fs.readdir(objects, { recursive: true }).catch(() => [] as string[])) {
    await fs.utimes(join(objects, name), hourAgo, hourAgo);
  }
}

/** Whether some session waits for an advisory lock: a collection held off by a write in flight. */
async function collectionWaits(): Promise<boolean> {
  const { rows } = await sql<{ waiting: number }>`
    select count(*)::int as waiting from pg_locks
    where locktype = 'advisory' and not granted
      and database = (select oid from pg_database where datname = current_database())
  `.execute(database.db);
  return (rows[0]?.waiting ?? 0) > 0;
}

describe("checkpoint garbage collection across api replicas", () => {
  it("never deletes an object that a write in flight on another replica reuses", {
    timeout: 120_000,
  }, async () => {
    const [writer, collector] = replicas as [Replica, Replica];
    const shared: ReplicaFile = { path: "shared.bin", seed: 1, size: 300_000 };
    const first = await writer.write("h1", [shared]);
    await ageObjects();

    // h2's write finds shared.bin already stored and goes on to a large new file
    const second = [shared, { path: "large.bin", seed: 2, size: 4 * 1024 * 1024 }];
    const inFlight = await writer.writePaused("h2", second, "large.bin");
    // meanwhile the other replica drops h1's only revision and collects
    const removal = collector.remove("h1", [first.id]);
    let removed = false;
    void removal.then(() => {
      removed = true;
    });
    while (!removed && !(await collectionWaits())) await new Promise((tick) => setTimeout(tick, 50));
    await inFlight.resume();
    const revision = await inFlight.written;
    await removal;

    expect(await restored("h2", revision.id)).toEqual(expected(second));
  });

  it("keeps every kept revision whole while both replicas write and collect at once, round after round", {
    timeout: 240_000,
  }, async () => {
    // Each round hands content over: home "a"'s only revision holds this round's files, and while
    // one replica drops it and collects, the other writes home "b" with the same files and a
    // large new one. Timings are left to chance (a random head start), so each round's sweep
    // may land before, inside or after the write.
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % below;
    };
    const generation = (round: number): ReplicaFile[] =>
      Array.from({ length: 1 + random(4) }, (_, i) => ({
        path: `round-${round}/file-${i}.bin`,
        seed: 1000 * round + i,
        size: 50_000 + random(250_000),
      }));
    const kept = new Map<string, { homeKey: string; files: ReplicaFile[] }>();
    const ROUNDS = 16;
    let files = generation(0);
    let source = await (replicas[0] as Replica).write("a", files);
    await ageObjects();
    for (let round = 0; round < ROUNDS; round += 1) {
      const writer = replicas[round % 2] as Replica;
      const collector = replicas[(round + 1) % 2] as Replica;
      const handedOver = [
        ...files,
        { path: `round-${round}/large.bin`, seed: 1000 * round + 999, size: 3_000_000 },
      ];
      const nextFiles = generation(round + 1);
      const headStart = random(30);
      const [written, next] = await Promise.all([
        (async () => {
          if (headStart >= 15) await new Promise((tick) => setTimeout(tick, headStart - 15));
          return writer.write("b", handedOver);
        })(),
        (async () => {
          if (headStart < 15) await new Promise((tick) => setTimeout(tick, headStart));
          await collector.remove("a", [source.id]);
          return collector.write("a", nextFiles);
        })(),
      ]);
      kept.set(written.id, { homeKey: "b", files: handedOver });
      source = next;
      files = nextFiles;
      await ageObjects();
    }
    kept.set(source.id, { homeKey: "a", files });
    const reader = createFileCheckpointStore(root, {
      sealing: createCheckpointSealing({ current: KEY, previous: [] }),
    });
    expect((await reader.list("a")).map((r) => r.id)).toEqual([source.id]);
    expect((await reader.list("b")).length).toBe(ROUNDS);
    const broken: string[] = [];
    for (const [id, { homeKey, files: expectedFiles }] of kept) {
      const back = await restored(homeKey, id).catch((error: Error) => error.message);
      if (typeof back === "string") broken.push(`${homeKey}/${id}: ${back}`);
      else expect(back, `${homeKey}/${id}`).toEqual(expected(expectedFiles));
    }
    expect(broken).toEqual([]);
  });
});
