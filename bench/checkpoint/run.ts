/**
 * `npm run bench:checkpoint`: a synthetic home (default ~200 MB / 5,000 files; up to 500 MB /
 * 10,000 and beyond with BENCH_CHECKPOINT_MB and BENCH_CHECKPOINT_FILES) checkpointed into the
 * file store from `tar -C <home> -c .`, as a provider's export gives it: a full checkpoint, an
 * incremental one of the unchanged home, and one after changing 1 % of the files. Each is shown
 * next to `tar -c <home> | sha256sum` of the same home, measured in the same run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { outputOf } from "@cubicle/providers/kernel";
import {
  createCheckpointSealing,
  createFileCheckpointStore,
  type RevisionInfo,
} from "../../api/src/checkpoints/store/index.ts";
import { buildHome, changeFiles } from "./home.ts";

const MEGABYTE = 1024 * 1024;
const HOME_MB = Number(process.env.BENCH_CHECKPOINT_MB ?? 200);
const FILES = Number(process.env.BENCH_CHECKPOINT_FILES ?? 5_000);
/** The whole run stays bounded; past this something hangs. */
const DEADLINE_MS = Number(process.env.BENCH_CHECKPOINT_DEADLINE_S ?? 900) * 1000;

if (!Number.isInteger(HOME_MB) || HOME_MB < 1 || HOME_MB > 2_048) {
  console.error(
    `BENCH_CHECKPOINT_MB must be a whole number of megabytes, 1 to 2048 (got "${process.env.BENCH_CHECKPOINT_MB}")`,
  );
  process.exit(1);
}
if (!Number.isInteger(FILES) || FILES < 10 || FILES > 100_000) {
  console.error(
    `BENCH_CHECKPOINT_FILES must be a whole number, 10 to 100000 (got "${process.env.BENCH_CHECKPOINT_FILES}")`,
  );
  process.exit(1);
}

const work = await fs.mkdtemp(join(tmpdir(), "cubicle-bench-checkpoint-"));
const children = new Set<ChildProcess>();
let cleaned = false;

async function cleanUp(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  for (const child of children) child.kill("SIGKILL");
  await fs.rm(work, { recursive: true, force: true });
}

function abort(message: string, code: number): void {
  console.error(message);
  void cleanUp().finally(() => process.exit(code));
}
process.once("SIGINT", () => abort("bench:checkpoint interrupted", 130));
process.once("SIGTERM", () => abort("bench:checkpoint terminated", 143));
process.once("SIGHUP", () => abort("bench:checkpoint hung up", 129));
setTimeout(() => abort(`bench:checkpoint did not finish in ${DEADLINE_MS / 1000} s`, 1), DEADLINE_MS).unref();

function track(child: ChildProcess): Promise<number | null> {
  children.add(child);
  return new Promise((done, fail) => {
    child.once("error", fail);
    child.once("close", (code) => {
      children.delete(child);
      done(code);
    });
  });
}

/** `tar -C home -c . | sha256sum`: the cost of just reading and hashing the home once. */
async function tarAndHash(home: string): Promise<number> {
  const started = performance.now();
  const tar = spawn("tar", ["-C", home, "-cf", "-", "."], { stdio: ["ignore", "pipe", "inherit"] });
  const sum = spawn("sha256sum", [], { stdio: ["pipe", "ignore", "inherit"] });
  tar.stdout?.pipe(sum.stdin as NodeJS.WritableStream);
  const [tarCode, sumCode] = await Promise.all([track(tar), track(sum)]);
  if (tarCode !== 0 || sumCode !== 0) throw new Error(`tar | sha256sum failed (${tarCode}, ${sumCode})`);
  return performance.now() - started;
}

/** The home as a provider exports it: `tar -C <home> -c .`, as a Web stream. */
function exportHome(home: string): ReadableStream<Uint8Array> {
  const tar = spawn("tar", ["-C", home, "--numeric-owner", "-cf", "-", "."], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = track(tar);
  return outputOf(
    tar,
    async () => {
      const code = await exited;
      return code === 0 ? null : new Error(`tar exited ${code}`);
    },
    { cancel: () => tar.kill("SIGKILL") },
  );
}

interface Row {
  name: string;
  ms: number;
  baselineMs: number;
  revision: RevisionInfo;
}

const mb = (bytes: number) => `${(bytes / MEGABYTE).toFixed(1)} MB`;

try {
  const homeDir = join(work, "home");
  console.log(`bench:checkpoint: building a home of ~${HOME_MB} MB in ${FILES} files under ${work}`);
  const buildStarted = performance.now();
  const home = await buildHome(homeDir, FILES, HOME_MB * MEGABYTE);
  console.log(
    `  built ${mb(home.totalBytes)} in ${((performance.now() - buildStarted) / 1000).toFixed(1)} s`,
  );
  // sealed as the api seals them, so the numbers include encryption at rest
  const store = createFileCheckpointStore(join(work, "store"), {
    sealing: createCheckpointSealing({ current: randomBytes(32).toString("base64url"), previous: [] }),
  });
  // warm the page cache, so the first measurement is not the only one reading from disk
  await tarAndHash(homeDir);

  const rows: Row[] = [];
  const measure = async (name: string, parentId: string | null): Promise<RevisionInfo> => {
    const baselineMs = Math.min(await tarAndHash(homeDir), await tarAndHash(homeDir));
    const started = performance.now();
    const revision = await store.write({
      homeKey: "bench",
      workspaceId: "bench",
      parentId,
      reason: "manual",
      tar: exportHome(homeDir),
    });
    rows.push({ name, ms: performance.now() - started, baselineMs, revision });
    return revision;
  };

  const full = await measure("full (first write)", null);
  const unchanged = await measure("incremental, unchanged", full.id);
  const changed = await changeFiles(home, 0.01);
  await measure(`incremental, ${changed} files (1 %) changed`, unchanged.id);

  console.log("");
  console.log(
    `${"checkpoint".padEnd(36)} ${"time".padStart(9)} ${"tar|sha256sum".padStart(14)} ${"ratio".padStart(7)} ${"size".padStart(10)} ${"files".padStart(6)} ${"new bytes".padStart(10)} ${"new %".padStart(7)}`,
  );
  for (const row of rows) {
    const { revision } = row;
    console.log(
      `${row.name.padEnd(36)} ${`${(row.ms / 1000).toFixed(2)} s`.padStart(9)} ${`${(row.baselineMs / 1000).toFixed(2)} s`.padStart(14)} ${`${(row.ms / row.baselineMs).toFixed(2)}x`.padStart(7)} ${mb(revision.sizeBytes).padStart(10)} ${String(revision.fileCount).padStart(6)} ${mb(revision.newBytes).padStart(10)} ${`${((100 * revision.newBytes) / revision.sizeBytes).toFixed(2)} %`.padStart(7)}`,
    );
  }
  const revisions = await store.list("bench");
  console.log(
    `\n${revisions.length} revisions listed; ratio = checkpoint time / (tar -c | sha256sum) time of the same home`,
  );
} catch (error) {
  console.error("bench:checkpoint failed:", error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
