// The production Compose stack (docker-compose.yml) as `npm run backup` and `npm run restore` see it
// (README "Deploy", "Backups"): which project and env file, its services and volumes, the computers
// whose homes it holds, and the backup folder's parts and manifest.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseEnv } from "node:util";
import { root } from "./run.mjs";

/** A refusal or a failure the user can act on: printed without a stack trace. */
export class Refusal extends Error {}

/** The files of a backup folder, one per part, and the manifest that lists them. */
export const PART_FILES = {
  postgres: "postgres.dump",
  checkpoints: "api-data.tar",
  homes: "homes.tar",
} as const;
export type PartName = keyof typeof PART_FILES;
export const MANIFEST_FILE = "manifest.json";
export const MANIFEST_VERSION = 1;

export interface Part {
  file: string;
  bytes: number;
  sha256: string;
}

export interface Manifest {
  version: number;
  createdAt: string;
  project: string;
  /** Taken with the api and the supervisor running (`--live`): not one consistent moment. */
  live: boolean;
  parts: Partial<Record<PartName, Part>>;
}

/** The api's own image: on every host that runs the stack (there is no registry), with GNU tar. */
const API_IMAGE = "cubicle-api:latest";
/** The services that write the checkpoint store and the homes (pg_dump reads in one snapshot anyway). */
const WRITERS = ["api", "supervisor"];
const HEALTHY_WITHIN_MS = 300_000;

export interface Stack {
  project: string;
  envFile: string;
  /** CUBICLE_HOMES_DIR, when the Docker provider's supervisor runs and keeps homes there. */
  homesDir: string | null;
}

/** The stack named by COMPOSE_PROJECT_NAME and CUBICLE_ENV_FILE (`.env`), as Compose resolves them. */
export function stackFromEnv(): Stack {
  const envFile = resolve(root, process.env.CUBICLE_ENV_FILE ?? ".env");
  if (!existsSync(envFile)) {
    throw new Refusal(
      `${envFile} does not exist: run npm run deploy:init first, or set CUBICLE_ENV_FILE to the stack's env file`,
    );
  }
  const fromFile = parseEnv(readFileSync(envFile, "utf8"));
  // Compose's own precedence: the shell's variables over the env file's
  const setting = (name: string) => process.env[name] ?? fromFile[name];
  const profiles = (setting("COMPOSE_PROFILES") ?? "").split(",");
  return {
    project: setting("COMPOSE_PROJECT_NAME") ?? "cubicle",
    envFile,
    homesDir: profiles.includes("docker")
      ? resolve(setting("CUBICLE_HOMES_DIR") ?? "/var/lib/cubicle")
      : null,
  };
}

interface Io {
  /** A file fed to the command's standard input. */
  from?: string;
  /** A file the command's standard output is written to (else it is returned). */
  into?: string;
  /** Exit codes besides 0 that are no failure (the caller reads `code`). */
  tolerated?: number[];
}

export interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The size and sha256 of the standard output. */
  part: Omit<Part, "file">;
}

/** A pass-through stream that counts and hashes what flows through it. */
function counter() {
  const hash = createHash("sha256");
  let bytes = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  return { stream, part: () => ({ bytes, sha256: hash.digest("hex") }) };
}

/** A stream's end: keeps what it is given in `chunks`, or drops it. */
const drain = (chunks?: Buffer[]) =>
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks?.push(chunk);
      done();
    },
  });

/** Runs `program` in the repository, its output hashed on its way into a file when `into` is given. */
async function execute(program: string, args: string[], io: Io = {}): Promise<Outcome> {
  const child = spawn(program, args, { cwd: root, stdio: "pipe" });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const count = counter();
  const sink = io.into ? createWriteStream(io.into, { mode: 0o600 }) : drain(out);
  const written = Promise.all([
    pipeline(child.stdout, count.stream, sink),
    pipeline(child.stderr, drain(err)),
  ]);
  // a command that stops reading its input early says why in its exit code and stderr
  if (!io.from) child.stdin.end();
  const fed = io.from
    ? pipeline(createReadStream(io.from), child.stdin).then(
        () => undefined,
        (error: Error) => error,
      )
    : Promise.resolve(undefined);
  const exited = new Promise<number | null>((done, failed) => {
    child.on("error", failed);
    child.on("close", done);
  });
  const [code, , unfed] = await Promise.all([exited, written, fed]);
  if (code === 0 && unfed) throw unfed;
  const [stdout, stderr] = [Buffer.concat(out).toString(), Buffer.concat(err).toString()];
  return { code, stdout, stderr, part: count.part() };
}

/** Runs `program`; a non-zero exit is a Refusal naming `what` with the program's own words. */
export async function run(program: string, args: string[], what: string, io: Io = {}): Promise<Outcome> {
  const outcome = await execute(program, args, io);
  if (outcome.code !== 0 && !io.tolerated?.includes(outcome.code ?? -1))
    throw new Refusal(`${what} failed (exit ${outcome.code}):\n${outcome.stderr.trim()}`);
  return outcome;
}

const lines = (text: string) => text.split("\n").filter(Boolean);

export function compose(stack: Stack, args: string[], what: string, io: Io = {}): Promise<Outcome> {
  const file = join(root, "docker-compose.yml");
  return run(
    "docker",
    ["compose", "-p", stack.project, "--env-file", stack.envFile, "-f", file, ...args],
    what,
    io,
  );
}

/** Postgres's server binaries and the `cubicle` role's password, then `script`, in the postgres service. */
export function inPostgres(stack: Stack, script: string, what: string, io: Io = {}): Promise<Outcome> {
  // the image's entrypoint finds its binaries the same way; every connection needs the password
  const prelude = [
    "set -e",
    "bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)",
    `export PGHOST=/var/run/postgresql PGUSER=cubicle PGPASSWORD="$(head -n 1 "$POSTGRES_PASSWORD_FILE" | tr -d '\\r\\n')"`,
    // a failure's own words, without the notices of what went well
    "export PGOPTIONS='-c client_min_messages=warning'",
  ].join("; ");
  return compose(stack, ["exec", "-T", "postgres", "sh", "-c", `${prelude}; ${script}`], what, io);
}

/** The api's volume (the checkpoint store under /data/checkpoints), which must exist. */
export async function apiDataVolume(stack: Stack): Promise<string> {
  const volume = `${stack.project}_api-data`;
  if ((await execute("docker", ["volume", "inspect", volume])).code !== 0) {
    throw new Refusal(`the volume ${volume} does not exist: is ${stack.project} the stack's project name?`);
  }
  return volume;
}

/**
 * `script` as root in a throwaway container of the api's image with the api's volume at /data and
 * no network, so that owners and modes of the store are read and written as they are.
 */
export function inApiData(
  volume: string,
  script: string,
  what: string,
  io: Io & { readOnly?: boolean } = {},
): Promise<Outcome> {
  const mount = `${volume}:/data${io.readOnly ? ":ro" : ""}`;
  const stdin = io.from ? ["--interactive"] : [];
  const args = [
    "run",
    "--rm",
    ...stdin,
    "--network",
    "none",
    "--user",
    "0:0",
    "-v",
    mount,
    "--entrypoint",
    "sh",
  ];
  return run("docker", [...args, API_IMAGE, "-c", script], what, io);
}

/** The services of the stack with a running container. */
export async function runningServices(stack: Stack): Promise<string[]> {
  const { stdout } = await run(
    "docker",
    [
      "ps",
      "--filter",
      `label=com.docker.compose.project=${stack.project}`,
      "--format",
      '{{.Label "com.docker.compose.service"}}',
    ],
    "listing the stack's containers",
  );
  return [...new Set(lines(stdout))];
}

/** The running computers whose homes are this stack's (their containers bind-mount them). */
async function runningComputers(stack: Stack): Promise<string[]> {
  if (!stack.homesDir) return [];
  const ps = ["ps", "-q", "--filter", "label=cubicle.managed=true", "--filter", "status=running"];
  const ids = lines((await run("docker", ps, "listing computers")).stdout);
  if (ids.length === 0) return [];
  const homes = `${join(stack.homesDir, "homes")}/`;
  const containers: { Name: string; Mounts: { Source: string }[] }[] = JSON.parse(
    (await run("docker", ["inspect", ...ids], "inspecting computers")).stdout,
  );
  return containers
    .filter((container) => container.Mounts.some((mount) => mount.Source.startsWith(homes)))
    .map((container) => container.Name.replace(/^\//, ""));
}

async function refuseRunningComputers(stack: Stack, advice: string): Promise<void> {
  const computers = await runningComputers(stack);
  if (computers.length === 0) return;
  throw new Refusal(
    `${computers.length} computer(s) of ${stack.project} are running (${computers.join(", ")}), and write ` +
      "their homes. End their sessions and stop them (the dashboard, or POST " +
      "/v1/workspaces/{workspaceId}/computers/{computerId}/stop), or wait until they are suspended " +
      `for being idle (SANDBOX_IDLE_MS), then run this again${advice}.`,
  );
}

/**
 * Runs `work` with the api and the supervisor stopped, the only writers of the checkpoint store and
 * the homes: meanwhile no checkpoint is taken or pruned and no computer starts. Refuses while
 * computers of the stack run (their homes would be read or replaced mid-write), checked before
 * stopping, so that a refusal costs no downtime, and after, as one may have started meanwhile.
 * Then every service that ran before is started again and waited for until healthy.
 */
export async function withWritersStopped<T>(
  stack: Stack,
  advice: string,
  work: () => Promise<T>,
): Promise<T> {
  await refuseRunningComputers(stack, advice);
  const running = await runningServices(stack);
  const writers = WRITERS.filter((service) => running.includes(service));
  const restart = async () => {
    if (writers.length === 0) return;
    console.log(`  starting ${running.join(", ")}`);
    // `start`, not `up`: the same containers come back, whatever the shell's variables say now
    await compose(stack, ["start", ...running], `starting ${running.join(", ")}`);
    await waitHealthy(stack, running);
  };
  let result: T;
  try {
    if (writers.length > 0) {
      console.log(`  stopping ${writers.join(", ")}`);
      await compose(stack, ["stop", ...writers], `stopping ${writers.join(", ")}`);
    }
    await refuseRunningComputers(stack, advice);
    result = await work();
  } catch (error) {
    // the first failure is the one to report; this one is only said
    await restart().catch((also: Error) => console.error(`  ${also.message}`));
    throw error;
  }
  await restart();
  return result;
}

async function waitHealthy(stack: Stack, services: string[]): Promise<void> {
  const deadline = Date.now() + HEALTHY_WITHIN_MS;
  for (;;) {
    const ps = ["ps", "-aq", "--filter", `label=com.docker.compose.project=${stack.project}`];
    const ids = lines((await run("docker", ps, "listing the stack's containers")).stdout);
    const containers: {
      Name: string;
      Config: { Labels: Record<string, string> };
      State: { Status: string; Health?: { Status: string } };
    }[] = ids.length > 0 ? JSON.parse((await run("docker", ["inspect", ...ids], "inspecting")).stdout) : [];
    const states = containers
      .filter((container) => services.includes(container.Config.Labels["com.docker.compose.service"] ?? ""))
      .map((container) => ({
        name: container.Name.replace(/^\//, ""),
        state: container.State.Health?.Status ?? container.State.Status,
      }));
    const waiting = states.filter(({ state }) => state !== "healthy" && state !== "running");
    if (waiting.length === 0) return;
    const failed = waiting.filter(({ state }) => state === "unhealthy" || state === "exited");
    if (failed.length > 0 || Date.now() > deadline) {
      const list = waiting.map(({ name, state }) => `${name} ${state}`).join(", ");
      throw new Refusal(`the stack did not come back healthy (${list}): see docker compose logs`);
    }
    await new Promise((done) => setTimeout(done, 2_000));
  }
}

/** The size and sha256 of a file. */
export async function partOf(path: string): Promise<Omit<Part, "file">> {
  const count = counter();
  await pipeline(createReadStream(path), count.stream, drain());
  return count.part();
}

/** The homes hold files of uid 1000 that only it may read, and their owners must come back as they were. */
export function requireRoot(action: string): void {
  if (process.getuid?.() !== 0) {
    throw new Refusal(
      `${action} the homes needs root, to read and give back every file's owner: run it with sudo`,
    );
  }
}

export const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Runs a script's body: a Refusal is printed as it is, and any failure exits non-zero. */
export function main(body: () => Promise<void>): void {
  body().catch((error: unknown) => {
    console.error(`\n✗ ${error instanceof Refusal ? error.message : (error as Error).stack}`);
    process.exitCode = 1;
  });
}
