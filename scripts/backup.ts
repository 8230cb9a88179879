// `npm run backup -- <folder> [--live]`: backs up the production Compose stack (README "Backups")
// into a new folder: Postgres (pg_dump, custom format), the api's volume (the checkpoint store) and
// the homes folder, each a file, listed with its size and sha256 in manifest.json, written last.
// The stack is COMPOSE_PROJECT_NAME's (default cubicle) with CUBICLE_ENV_FILE (default .env).
//
// Consistency: the database's rows and the store's files describe the same checkpoints, and a home
// copied while its computer runs can hold half-written files (a browser's databases). So by default
// the backup refuses while computers run, and stops the api and the supervisor for the copy (a
// database, a store and homes of one moment, at the cost of that downtime; the dashboard and the
// proxy stay up), then starts them again. `--live` stops nothing, for hosts whose bots never rest:
// each part is then copied as it is at its turn, files changing meanwhile are said but not fatal.

import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  apiDataVolume,
  inApiData,
  inPostgres,
  MANIFEST_FILE,
  MANIFEST_VERSION,
  type Manifest,
  main,
  megabytes,
  type Outcome,
  PART_FILES,
  type PartName,
  Refusal,
  requireRoot,
  run,
  runningServices,
  type Stack,
  stackFromEnv,
  withWritersStopped,
} from "./lib/compose.ts";

/** GNU tar's "some files changed while they were read", which only a live backup may meet. */
const TAR_FILES_CHANGED = 1;

main(async () => {
  const { values, positionals } = parseArgs({
    options: { live: { type: "boolean", default: false } },
    allowPositionals: true,
  });
  const [folder] = positionals;
  if (folder === undefined || positionals.length > 1) {
    throw new Refusal("usage: npm run backup -- <new or empty folder> [--live]");
  }
  // npm runs scripts from the repository's root: a relative folder is the caller's
  const dir = resolve(process.env.INIT_CWD ?? process.cwd(), folder);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new Refusal(
      `${dir} is not an empty folder: each backup goes into a new one, so none is overwritten`,
    );
  }
  const stack = stackChecked();
  if (!(await runningServices(stack)).includes("postgres")) {
    throw new Refusal(
      `the stack ${stack.project} is not running (no postgres container): start it with ` +
        "docker compose up -d --wait, then back it up",
    );
  }
  const volume = await apiDataVolume(stack);
  const { live } = values;

  const created = !existsSync(dir);
  // it will hold password hashes and sealed secrets
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const manifest: Manifest = {
    version: MANIFEST_VERSION,
    createdAt: new Date().toISOString(),
    project: stack.project,
    live,
    parts: {},
  };
  const into = (name: PartName) => join(dir, PART_FILES[name]);
  const record = (name: PartName, outcome: Outcome) => {
    manifest.parts[name] = { file: PART_FILES[name], ...outcome.part };
    console.log(`  ${name.padEnd(12)} ${PART_FILES[name].padEnd(14)} ${megabytes(outcome.part.bytes)}`);
    if (outcome.code === TAR_FILES_CHANGED)
      console.warn(`  (files changed as they were read)\n${outcome.stderr}`);
  };
  const tolerated = live ? [TAR_FILES_CHANGED] : [];
  const manifestFile = join(dir, MANIFEST_FILE);
  const copy = async () => {
    // Postgres first: in a live backup every checkpoint the dump lists is then in the store copied
    // after it, unless pruned in between
    const dump = '"$bin/pg_dump" --format=custom cubicle';
    record("postgres", await inPostgres(stack, dump, "pg_dump", { into: into("postgres") }));
    const tar = "exec tar --create --file=- --numeric-owner -C /data .";
    const io = { readOnly: true, into: into("checkpoints"), tolerated };
    record("checkpoints", await inApiData(volume, tar, "copying the api's volume", io));
    if (stack.homesDir) {
      const args = ["--create", "--file=-", "--numeric-owner", "-C", stack.homesDir, "homes"];
      record("homes", await run("tar", args, "copying the homes", { into: into("homes"), tolerated }));
    }
    // last: a folder without it is no backup
    writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  };
  try {
    await (live ? copy() : withWritersStopped(stack, ", or back up anyway with --live", copy));
  } catch (error) {
    // a partial backup is removed, so that it is never mistaken for one; a complete one is kept
    // even when the stack failed to come back
    if (!existsSync(manifestFile)) {
      for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
      if (created) rmSync(dir, { recursive: true, force: true });
    }
    throw error;
  }
  console.log(`\nBacked up ${stack.project} to ${dir}. Keep the secrets folder too: restoring needs it.`);
});

/** The stack, and its homes folder when it has one; reading every home needs root. */
function stackChecked(): Stack {
  const stack = stackFromEnv();
  if (stack.homesDir) {
    requireRoot("Backing up");
    if (!existsSync(join(stack.homesDir, "homes"))) {
      throw new Refusal(`${join(stack.homesDir, "homes")} does not exist: is CUBICLE_HOMES_DIR the stack's?`);
    }
  }
  return stack;
}
