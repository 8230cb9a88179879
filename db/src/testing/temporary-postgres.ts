import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";

export interface TemporaryPostgres {
  /** Superuser URL of the `postgres` database on loopback. */
  readonly url: string;
  stop(): Promise<void>;
}

const SERVER_ROOT = "/usr/lib/postgresql";

/**
 * A real Postgres server for one test run: initdb into a temporary directory, listen on a free
 * loopback port, remove everything on stop (scripts/lib/system-packages.mjs installs the server).
 * Postgres refuses to run as root, so as root the server runs as the `postgres` system user.
 */
export async function startTemporaryPostgres(): Promise<TemporaryPostgres> {
  const bin = findServerBinaries();
  if (!bin) {
    throw new Error(
      `no Postgres server binaries under ${SERVER_ROOT}: install Debian's 'postgresql' (npm test does)`,
    );
  }
  const asRoot = process.getuid?.() === 0;
  const dataDir = mkdtempSync(join(tmpdir(), "cubicle-pg-"));
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dataDir, uid, gid);
  }
  const run = (program: string, args: string[]) =>
    asRoot
      ? { cmd: "runuser", args: ["-u", "postgres", "--", join(bin, program), ...args] }
      : { cmd: join(bin, program), args };

  const initdb = run("initdb", ["-D", dataDir, "-U", "cubicle", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  execFileSync(initdb.cmd, initdb.args, { stdio: "pipe" });

  const port = await findFreePort();
  const server = run("postgres", [
    "-D",
    dataDir,
    "-p",
    String(port),
    "-k",
    dataDir,
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    "fsync=off",
    "-c",
    "synchronous_commit=off",
    "-c",
    "full_page_writes=off",
    "-c",
    "max_connections=200",
  ]);
  const child = spawn(server.cmd, server.args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `postgres://cubicle@127.0.0.1:${port}/postgres`;

  // runuser does not pass SIGINT on, so the postmaster itself is told to do a fast shutdown.
  const stop = async () => {
    if (child.exitCode === null) {
      const postmasterPid = readPostmasterPid(dataDir);
      if (postmasterPid) process.kill(postmasterPid, "SIGINT");
      else child.kill("SIGKILL");
    }
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitUntilAccepting(url, () => child.exitCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`temporary Postgres did not start: ${String(error)}\n${log}`);
  }
  return { url, stop };
}

/** A fresh, empty database on the server, so that every test file starts from nothing. */
export async function createEmptyDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name.replace(/[^a-z0-9_]/g, "_")}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name.replace(/[^a-z0-9_]/g, "_")}`;
  return url.toString();
}

function readPostmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function findServerBinaries(): string | undefined {
  if (!existsSync(SERVER_ROOT)) return undefined;
  const versions = readdirSync(SERVER_ROOT)
    .filter((version) => existsSync(join(SERVER_ROOT, version, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(SERVER_ROOT, versions[0], "bin");
}

/** A TCP port on loopback that nothing listens on right now. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function waitUntilAccepting(url: string, hasExited: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (hasExited()) throw new Error("the server process exited");
    const client = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await client`select 1`;
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end();
    }
  }
}
