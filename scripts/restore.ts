// `npm run restore -- <folder>`: puts a backup made by `npm run backup` back into the production
// Compose stack (README "Backups"), the one of COMPOSE_PROJECT_NAME (default cubicle) with
// CUBICLE_ENV_FILE (default .env), running or not, even with its volumes gone.
//
// Nothing of the current data is touched before every part matches the manifest's sha256. Then,
// with the api and the supervisor stopped, each part is first unpacked beside the current data (a
// second database, a folder in the api's volume, one beside the homes); only when all three are,
// the current data is swapped for them. A failure before the swap leaves the current data as it was.

import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  apiDataVolume,
  compose,
  inApiData,
  inPostgres,
  MANIFEST_FILE,
  MANIFEST_VERSION,
  type Manifest,
  main,
  megabytes,
  PART_FILES,
  type Part,
  type PartName,
  partOf,
  Refusal,
  requireRoot,
  run,
  runningServices,
  type Stack,
  stackFromEnv,
  withWritersStopped,
} from "./lib/compose.ts";

/** The parts every backup has; homes only when the stack ran computers in Docker. */
const REQUIRED: PartName[] = ["postgres", "checkpoints"];
/** Where each part is unpacked before it replaces the current data. */
const STAGED_DATABASE = "cubicle_restoring";
const STAGED_STORE = "/data/.restoring";
const STAGED_HOMES = ".restoring";
const REPLACED_HOMES = ".replaced";

/** One part's way back: unpacked beside the current data, swapped in, or thrown away. */
interface Step {
  name: PartName;
  stage(): Promise<unknown>;
  swap(): Promise<unknown>;
  discard(): Promise<unknown>;
}

main(async () => {
  const { positionals } = parseArgs({ allowPositionals: true });
  const [folder] = positionals;
  if (folder === undefined || positionals.length > 1)
    throw new Refusal("usage: npm run restore -- <backup folder>");
  // npm runs scripts from the repository's root: a relative folder is the caller's
  const dir = resolve(process.env.INIT_CWD ?? process.cwd(), folder);
  const stack = stackFromEnv();
  const manifest = await verified(dir);
  if (manifest.parts.homes) {
    requireRoot("Restoring");
    if (!stack.homesDir) {
      throw new Refusal(
        `the backup holds homes, but ${stack.project} runs no supervisor to use them (COMPOSE_PROFILES has no docker)`,
      );
    }
    if (!existsSync(stack.homesDir)) {
      throw new Refusal(
        `${stack.homesDir} does not exist: run npm run deploy:init (with the kept secrets) first`,
      );
    }
  }

  const wasRunning = await runningServices(stack);
  if (!wasRunning.includes("postgres")) {
    // a stack that is down, or new (its volumes made here, as Compose makes them)
    console.log("  starting postgres");
    await compose(stack, ["up", "-d", "--wait", "postgres"], "starting postgres");
  }
  const volume = await apiDataVolume(stack);
  await withWritersStopped(stack, "", async () => {
    const steps = stepsOf(stack, volume, dir, manifest);
    try {
      for (const step of steps) {
        console.log(`  unpacking ${step.name}`);
        await step.stage();
      }
    } catch (error) {
      for (const step of steps) {
        await step
          .discard()
          .catch((left: Error) => console.warn(`  (${step.name} left unpacked: ${left.message})`));
      }
      throw new Refusal(`${(error as Error).message}\nNothing was replaced: the current data is as it was.`);
    }
    const swapped: PartName[] = [];
    for (const step of steps) {
      try {
        await step.swap();
      } catch (error) {
        throw new Refusal(
          `${(error as Error).message}\nReplacing ${step.name} failed after ${swapped.join(", ") || "nothing"} ` +
            "had been replaced: run the restore again.",
        );
      }
      swapped.push(step.name);
      console.log(`  replaced  ${step.name}`);
    }
  });
  console.log(
    wasRunning.includes("api")
      ? `\nRestored ${stack.project} from ${dir}; it runs again.`
      : `\nRestored ${stack.project} from ${dir}. Start it: docker compose up -d --wait`,
  );
});

/** The manifest, once every part it lists is there with its size and sha256. */
async function verified(dir: string): Promise<Manifest> {
  const file = join(dir, MANIFEST_FILE);
  if (!existsSync(file)) {
    throw new Refusal(`${dir} holds no ${MANIFEST_FILE}: not a backup, or one that did not finish`);
  }
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Refusal(`${file} is not JSON: ${(error as Error).message}`);
  }
  if (manifest.version !== MANIFEST_VERSION) {
    throw new Refusal(
      `${file} is of version ${manifest.version}; this restore reads version ${MANIFEST_VERSION}`,
    );
  }
  const parts = Object.entries(manifest.parts ?? {}) as [string, Part][];
  for (const name of REQUIRED) {
    if (!manifest.parts?.[name]) throw new Refusal(`${file} lists no ${name} part`);
  }
  for (const [name, part] of parts) {
    const expected = PART_FILES[name as PartName];
    if (part.file !== expected) throw new Refusal(`${file} lists an unknown part: ${name} (${part.file})`);
    const path = join(dir, part.file);
    if (!existsSync(path)) throw new Refusal(`the ${name} part (${path}) is missing`);
    const actual = await partOf(path);
    if (actual.sha256 !== part.sha256 || actual.bytes !== part.bytes) {
      throw new Refusal(
        `the ${name} part (${path}) does not match ${MANIFEST_FILE}: it has ${actual.bytes} bytes of sha256 ` +
          `${actual.sha256}, the manifest says ${part.bytes} bytes of sha256 ${part.sha256}. The backup is ` +
          "damaged or was changed; nothing was restored.",
      );
    }
    console.log(`  verified  ${name.padEnd(12)} ${megabytes(part.bytes)}`);
  }
  console.log(
    `  from a backup of ${manifest.project} made ${manifest.createdAt}${manifest.live ? " (live)" : ""}`,
  );
  return manifest;
}

function stepsOf(stack: Stack, volume: string, dir: string, manifest: Manifest): Step[] {
  const from = (name: PartName) => join(dir, PART_FILES[name]);
  const psql = (...commands: string[]) =>
    `"$bin/psql" -v ON_ERROR_STOP=1 -q -d postgres ${commands.map((command) => `-c '${command}'`).join(" ")}`;
  const steps: Step[] = [
    {
      name: "postgres",
      // a database of its own, so the current one is dropped only once the dump restored whole
      stage: () =>
        inPostgres(
          stack,
          `${psql(`DROP DATABASE IF EXISTS ${STAGED_DATABASE}`, `CREATE DATABASE ${STAGED_DATABASE}`)} && ` +
            `"$bin/pg_restore" --exit-on-error --single-transaction -d ${STAGED_DATABASE}`,
          "pg_restore",
          { from: from("postgres") },
        ),
      swap: () =>
        inPostgres(
          stack,
          psql(
            "DROP DATABASE IF EXISTS cubicle WITH (FORCE)",
            `ALTER DATABASE ${STAGED_DATABASE} RENAME TO cubicle`,
          ),
          "replacing the database",
        ),
      discard: () => inPostgres(stack, psql(`DROP DATABASE IF EXISTS ${STAGED_DATABASE}`), "dropping"),
    },
    {
      name: "checkpoints",
      stage: () =>
        inApiData(
          volume,
          `rm -rf ${STAGED_STORE} && mkdir ${STAGED_STORE} && ` +
            `tar --extract --file=- --numeric-owner --same-owner --same-permissions -C ${STAGED_STORE}`,
          "unpacking the api's volume",
          { from: from("checkpoints") },
        ),
      // the volume's root keeps the owner and mode it had in the backup, as every file under it
      swap: () =>
        inApiData(
          volume,
          `find /data -mindepth 1 -maxdepth 1 ! -path ${STAGED_STORE} -exec rm -rf {} + && ` +
            `find ${STAGED_STORE} -mindepth 1 -maxdepth 1 -exec mv -t /data {} + && ` +
            `chown --reference=${STAGED_STORE} /data && chmod --reference=${STAGED_STORE} /data && ` +
            `rmdir ${STAGED_STORE}`,
          "replacing the api's volume",
        ),
      discard: () => inApiData(volume, `rm -rf ${STAGED_STORE}`, "removing the unpacked volume"),
    },
  ];
  const { homesDir } = stack;
  if (manifest.parts.homes && homesDir) {
    const staged = join(homesDir, STAGED_HOMES);
    const [current, replaced] = [join(homesDir, "homes"), join(homesDir, REPLACED_HOMES)];
    steps.push({
      name: "homes",
      stage: () => {
        rmSync(staged, { recursive: true, force: true });
        mkdirSync(staged, { mode: 0o700 });
        const tar = [
          "--extract",
          `--file=${from("homes")}`,
          "--numeric-owner",
          "--same-owner",
          "--same-permissions",
        ];
        return run("tar", [...tar, "-C", staged], "unpacking the homes");
      },
      // renames within one folder: the homes are never half replaced
      swap: async () => {
        rmSync(replaced, { recursive: true, force: true });
        if (existsSync(current)) renameSync(current, replaced);
        renameSync(join(staged, "homes"), current);
        rmSync(replaced, { recursive: true, force: true });
        rmSync(staged, { recursive: true, force: true });
      },
      discard: async () => rmSync(staged, { recursive: true, force: true }),
    });
  }
  return steps;
}
