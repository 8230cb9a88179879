import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findFreePort } from "@cubicle/db/testing";
import { startTestSupervisor, type TestSupervisor } from "@cubicle/supervisor/testing";
import { startTestApi, type TestApi } from "./harness.ts";
import { until } from "./until.ts";

/** The network the Docker computers of api tests join (the supervisor's default is another). */
export const TEST_COMPUTERS_NETWORK = "cubicle-computers";

/**
 * A real supervisor as its own process, so that a test can kill it (SIGKILL), stop it (SIGSTOP)
 * and start it again on the same port and data folder, as a crash and a restart would.
 */
export class SupervisorProcess {
  private child: ChildProcess | undefined;
  readonly token = randomBytes(32).toString("hex");
  readonly dataDir = mkdtempSync(join(tmpdir(), "cubicle-test-supervisor-"));
  constructor(readonly port: number) {}
  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The host folder of a computer's home (the supervisor's DATA_DIR/homes/<homeKey>). */
  homeDir(homeKey: string): string {
    return join(this.dataDir, "homes", homeKey);
  }

  /** Upload temporaries anywhere in a home, as the host sees it: an upload that left one behind. */
  uploadLeftovers(homeKey: string): string[] {
    return readdirSync(this.homeDir(homeKey), { recursive: true, encoding: "utf8" }).filter((path) =>
      path.split("/").at(-1)?.startsWith(".cubicle-upload-"),
    );
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, ["--import", "tsx", "supervisor/src/main.ts"], {
      cwd: join(import.meta.dirname, "../.."),
      env: {
        ...process.env,
        DATA_DIR: this.dataDir,
        SANDBOX_SUPERVISOR_TOKEN: this.token,
        SUPERVISOR_PORT: String(this.port),
        SUPERVISOR_NETWORK: TEST_COMPUTERS_NETWORK,
      },
      stdio: ["ignore", "ignore", "inherit"],
    });
    this.child = child;
    await until(
      "the supervisor to answer",
      async () => {
        if (child.exitCode !== null) throw new Error(`the supervisor exited with ${child.exitCode}`);
        const health = await fetch(`${this.url}/health`).catch(() => null);
        return health?.ok ? true : undefined;
      },
      60_000,
    );
  }

  /** Kills it outright, as a crash would, and waits until it is gone. */
  async kill9(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  /** SIGSTOP (freeze) or SIGCONT (thaw): the kernel still takes its connections, nothing answers. */
  signal(signal: "SIGSTOP" | "SIGCONT"): void {
    this.child?.kill(signal);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGCONT");
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  /** Stops it and removes its data folder (the homes). */
  async remove(): Promise<void> {
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** What points an api at a supervisor: the docker provider, on that supervisor's computers. */
const onSupervisor = (supervisor: { url: string; token: string }) => ({
  SANDBOX_PROVIDER: "docker",
  SANDBOX_SUPERVISOR_URL: supervisor.url,
  SANDBOX_SUPERVISOR_TOKEN: supervisor.token,
});

/** A real supervisor process on a free port, and an api running its computers on it (`env` added). */
export async function startApiOnSupervisor(
  env: Record<string, string> = {},
): Promise<{ supervisor: SupervisorProcess; t: TestApi }> {
  const supervisor = new SupervisorProcess(await findFreePort());
  await supervisor.start();
  const t = await startTestApi({ ...onSupervisor(supervisor), ...env });
  return { supervisor, t };
}

/**
 * A supervisor in the test's own process (no crash to stage), and an api running its computers on
 * it (`env` added).
 */
export async function startApiOnTestSupervisor(
  env: Record<string, string> = {},
): Promise<{ supervisor: TestSupervisor; t: TestApi }> {
  const supervisor = await startTestSupervisor();
  const t = await startTestApi({ ...onSupervisor(supervisor), ...env });
  return { supervisor, t };
}
