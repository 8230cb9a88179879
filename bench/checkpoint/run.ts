/**
 * `npm run bench:checkpoint`: a synthetic home (default ~200 MB / 5,000 files; up to 500 MB /
 * 10,000 and beyond with BENCH_CHECKPOINT_MB and BENCH_CHECKPOINT_FILES) checkpointed into the
 * file store as the api takes it from a provider that lists homes (the desktop provider's `find`
 * listing, then `tar -T` of what the store asks for): a full checkpoint, one of the unchanged
 * home (which reads no file), and one after changing 1 % of the files. Each is shown
 * next to `tar -c <home> | sha256sum` of the same home, measured in the same run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createCheckpointSealing,
  createFileCheckpointStore,
  type RevisionInfo,
  syncFileSystem,
} from "@cubicle/api/checkpoints/store";
import { changesOf } from "@cubicle/api/testing/homes";
import { onAbort } from "../abort.ts";
import { envInteger, type MeasureRow, printMeasures, printTable, times } from "../report.ts";
import { buildHome, changeFiles } from "./home.ts";

const MEGABYTE = 1024 * 1024;
const HOME_MB = envInteger("BENCH_CHECKPOINT_MB", 200, 1, 2_048);
const FILES = envInteger("BENCH_CHECKPOINT_FILES", 5_000, 10, 100_000);
/** The whole run stays bounded; past this something hangs. */
const DEADLINE_MS = envInteger("BENCH_CHECKPOINT_DEADLINE_S", 900, 10, 7_200) * 1000;

const work = await fs.mkdtemp(join(tmpdir(), "cubicle-bench-checkpoint-"));
const children = new Set<ChildProcess>();
let cleaned = false;

async function cleanUp(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  for (const child of children) child.kill("SIGKILL");
  await fs.rm(work, { recursive: true, force: true });
}

onAbort("bench:checkpoint", DEADLINE_MS, cleanUp);

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

interface Row {
  name: string;
  ms: number;
  baselineMs: number;
  revision: RevisionInfo;
}

const mb = (bytes: number) => `${(bytes / MEGABYTE).toFixed(1)} MB`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

try {
  const homeDir = join(work, "home");
  console.log(`bench:checkpoint: building a home of ~${HOME_MB} MB in ${FILES} files under ${work}`);
  const buildStarted = performance.now();
  const home = await buildHome(homeDir, FILES, HOME_MB * MEGABYTE);
  console.log(
    `  built ${mb(home.totalBytes)} in ${((performance.now() - buildStarted) / 1000).toFixed(1)} s`,
  );
  // a lived-in home was written back long ago (the kernel flushes dirty pages within 30 s): the
  // store's own flush must not also pay for the bench having just written 500 MB
  await syncFileSystem(homeDir);
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
      // as the api takes it from a provider with listHome (the desktop provider's way): `find`
      // lists the home, `tar -T` reads what the store asks for
      changes: changesOf(homeDir),
    });
    rows.push({ name, ms: performance.now() - started, baselineMs, revision });
    return revision;
  };

  const full = await measure("full (first write)", null);
  const unchanged = await measure("incremental, unchanged", full.id);
  const changed = await changeFiles(home, 0.01);
  await syncFileSystem(homeDir);
  await measure(`incremental, ${changed} files (1 %) changed`, unchanged.id);

  console.log("");
  printTable([
    ["checkpoint", "time", "tar|sha256sum", "ratio", "size", "files", "new bytes", "new %"],
    ...rows.map(({ name, ms, baselineMs, revision }) => [
      name,
      seconds(ms),
      seconds(baselineMs),
      times(ms, baselineMs),
      mb(revision.sizeBytes),
      String(revision.fileCount),
      mb(revision.newBytes),
      `${((100 * revision.newBytes) / revision.sizeBytes).toFixed(2)} %`,
    ]),
  ]);
  const revisions = await store.list("bench");
  console.log(
    `\n${revisions.length} revisions listed; ratio = checkpoint time / (tar -c | sha256sum) time of the same home`,
  );
  const [fullRow, unchangedRow, changedRow] = rows as [Row, Row, Row];
  const measureRow = (row: Row, label: string, factor: number | undefined): MeasureRow => ({
    measure: `checkpoint ${label}, ${mb(row.revision.sizeBytes)} / ${row.revision.fileCount} files`,
    reference: `tar|sha256sum ${seconds(row.baselineMs)}`,
    result: seconds(row.ms),
    ratio: times(row.ms, row.baselineMs),
    target: factor === undefined ? "—" : `<= ${factor}x`,
    met: factor === undefined ? undefined : row.ms <= factor * row.baselineMs,
  });
  printMeasures([
    measureRow(unchangedRow, "of an unchanged home", 0.1),
    measureRow(fullRow, "full", 1.3),
    measureRow(changedRow, "with 1 % of files changed", undefined),
  ]);
} catch (error) {
  console.error("bench:checkpoint failed:", error);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
