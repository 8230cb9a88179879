import { execFileSync, spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export interface TemporaryPostgres {
  /** Superuser URL of the `postgres` database on loopback. */
  readonly url: string;
  /** Shuts the server down and removes its data. */
  stop(): Promise<void>;
  /** Shuts the server down (fast: connections are cut) and starts it again, same data and port. */
  restart(): Promise<void>;
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
  const url = `postgres://cubicle@127.0.0.1:${port}/postgres`;
  let server = await launch(run, dataDir, port, url).catch((error: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  const stop = async () => {
    await server.shutDown();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const restart = async () => {
    await server.shutDown();
    server = await launch(run, dataDir, port, url);
  };
  return { url, stop, restart };
}

interface RunningServer {
  /** A fast shutdown: open connections are cut, what was committed stays. */
  shutDown(): Promise<void>;
}

async function launch(
  run: (program: string, args: string[]) => { cmd: string; args: string[] },
  dataDir: string,
  port: number,
  url: string,
): Promise<RunningServer> {
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
  // runuser does not pass SIGINT on, so the postmaster itself is told to do a fast shutdown.
  const shutDown = async () => {
    if (child.exitCode === null) {
      const postmasterPid = readPostmasterPid(dataDir);
      if (postmasterPid) process.kill(postmasterPid, "SIGINT");
      else child.kill("SIGKILL");
    }
    await exited;
  };
  try {
    await waitUntilAccepting(url, () => child.exitCode !== null);
  } catch (error) {
    await shutDown();
    throw new Error(`temporary Postgres did not start: ${String(error)}\n${log}`);
  }
  return { shutDown };
}

/** A fresh, empty database on the server, so that every test file starts from nothing. */
export async function createEmptyDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  try {
    await admin.connect();
    await admin.query(`create database "${name.replace(/[^a-z0-9_]/g, "_")}"`);
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
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    // a server still starting up may cut the connection; connect() or query() reports it
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("select 1");
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await client.end();
    }
  }
}
