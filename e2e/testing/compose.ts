/**
 * A production Compose stack (docker-compose.yml) in a test: its own project name, subnets and
 * ports, prepared by `npm run deploy:init` as an operator would, driven by `docker compose`.
 */
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { findFreePort } from "@cubicle/db/testing";

export const repoRoot = resolve(import.meta.dirname, "..", "..");
export const UP_TIMEOUT_MS = 300_000;

export interface RunResult {
  code: number | null;
  output: string;
}

/**
 * Runs a command to its end without blocking the event loop: a test process frozen in spawnSync
 * misses its HTTP client's sockets closing and then sends on a dead one.
 */
export function run(command: string, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...env } });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), UP_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

export async function docker(...args: string[]): Promise<string> {
  const result = await run("docker", args);
  if (result.code !== 0) throw new Error(`docker ${args.join(" ")} failed:\n${result.output}`);
  return result.output.trim();
}

export const inspect = async (name: string) => JSON.parse(await docker("inspect", name))[0];

/**
 * Waits until the service images are built. `npm test` builds them beside the first suites and
 * names the status file it writes when that build ends in CUBICLE_SERVICE_IMAGES_STATUS; without
 * it (Vitest run by hand) they were built before, by `npm run images` or an earlier `npm test`.
 */
export async function serviceImagesBuilt(): Promise<void> {
  const status = process.env.CUBICLE_SERVICE_IMAGES_STATUS;
  if (!status) return;
  if (!existsSync(status)) {
    await new Promise<void>((done) => {
      const watcher = watch(dirname(status), (_event, name) => {
        if (name === basename(status) && existsSync(status)) {
          watcher.close();
          done();
        }
      });
      // written between the check above and the watch
      if (existsSync(status)) {
        watcher.close();
        done();
      }
    });
  }
  const { ok, log } = JSON.parse(readFileSync(status, "utf8")) as { ok: boolean; log: string };
  if (!ok) {
    const tail = readFileSync(log, "utf8").trimEnd().split("\n").slice(-40).join("\n");
    throw new Error(`the service images could not be built (${log}):\n${tail}`);
  }
}

export interface StackOptions {
  /** The Compose project name, distinct per test file. */
  project: string;
  /** The /24 prefixes of its networks (`172.31.241`), distinct per test file. */
  edgeNet: string;
  screensNet: string;
  backendNet: string;
  controlNet: string;
  /** More of the stack's variables (CUBICLE_API_REPLICAS, SANDBOX_IDLE_MS…). */
  env?: Record<string, string>;
}

export class ComposeStack {
  /** A folder of the test's own, traversable by the supervisor's uid (homes live under it). */
  readonly dir = mkdtempSync(join(tmpdir(), "cubicle-compose-"));
  readonly secrets = join(this.dir, "secrets");
  readonly homes = join(this.dir, "data");
  readonly envFile = join(this.dir, ".env");
  readonly project: string;
  env: Record<string, string> = {};
  webUrl = "";

  constructor(private readonly options: StackOptions) {
    this.project = options.project;
  }

  /** Ports, deploy:init with `provider`, and no leftover of an earlier run of this project. */
  async init(provider = "docker"): Promise<RunResult> {
    await serviceImagesBuilt();
    chmodSync(this.dir, 0o755);
    const [webPort, proxyPort] = [await findFreePort(), await findFreePort()];
    this.webUrl = `http://127.0.0.1:${webPort}`;
    const { edgeNet, screensNet, backendNet, controlNet } = this.options;
    this.env = {
      CUBICLE_WEB_PORT: String(webPort),
      CUBICLE_PROXY_PORT: String(proxyPort),
      CUBICLE_PUBLIC_URL: this.webUrl,
      CUBICLE_PROXY_PUBLIC_URL: `ws://127.0.0.1:${proxyPort}`,
      // subnets of its own, so an operator's stack on this engine is left alone
      CUBICLE_EDGE_SUBNET: `${edgeNet}.0/24`,
      CUBICLE_SCREENS_SUBNET: `${screensNet}.0/24`,
      CUBICLE_SCREENS_GATEWAY: `${screensNet}.1`,
      CUBICLE_BACKEND_SUBNET: `${backendNet}.0/24`,
      CUBICLE_CONTROL_SUBNET: `${controlNet}.0/24`,
      // each service's health checked every 2 s, not every 10: every `up --wait` here waits on its
      // services in turn (postgres, then the api, then the proxy and the dashboard), and each of
      // them for its next check after it is ready
      CUBICLE_HEALTH_INTERVAL: "2s",
      ...this.options.env,
    };
    await this.compose(["down", "--volumes", "--remove-orphans"]);
    return run("node", ["--import", "tsx", "scripts/deploy-init.ts"], {
      CUBICLE_SECRETS_DIR: this.secrets,
      CUBICLE_HOMES_DIR: this.homes,
      CUBICLE_ENV_FILE: this.envFile,
      SANDBOX_PROVIDER: provider,
    });
  }

  compose(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
    const file = ["-p", this.project, "--env-file", this.envFile, "-f", "docker-compose.yml"];
    return run("docker", ["compose", ...file, ...args], { ...this.env, ...env });
  }

  async up(env: Record<string, string> = {}): Promise<void> {
    const result = await this.compose(["up", "-d", "--wait", "--wait-timeout", "240"], env);
    if (result.code !== 0) {
      const logs = (await this.compose(["logs", "--no-color", "--tail", "40"])).output;
      throw new Error(`docker compose up failed:\n${result.output}\n${logs}`);
    }
  }

  /** The running containers of one service. */
  async containersOf(service: string): Promise<string[]> {
    const project = `label=com.docker.compose.project=${this.project}`;
    const ids = await docker(
      "ps",
      "-q",
      "--filter",
      project,
      "--filter",
      `label=com.docker.compose.service=${service}`,
    );
    return ids.split("\n").filter(Boolean);
  }

  /** Down with its volumes, and the computers its supervisor made for `workspaceIds` (not Compose's). */
  async remove(workspaceIds: string[] = []): Promise<void> {
    await this.compose(["down", "--volumes", "--remove-orphans"]);
    for (const workspaceId of workspaceIds.filter(Boolean)) {
      const computers = await run("docker", [
        "ps",
        "-aq",
        "--filter",
        `label=cubicle.workspaceId=${workspaceId}`,
      ]);
      const ids = computers.output.split("\n").filter(Boolean);
      if (ids.length > 0) await run("docker", ["rm", "-f", ...ids]);
    }
  }
}
