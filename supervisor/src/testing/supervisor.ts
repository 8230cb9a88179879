import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../config.ts";
import type { ContainerManager } from "../containers/manager.ts";
import { startSupervisor } from "../server.ts";

export interface TestSupervisor {
  /** e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** The random bearer token it requires. */
  readonly token: string;
  /** Its temporary DATA_DIR, removed by close(). */
  readonly dataDir: string;
  /** Stops it and keeps its DATA_DIR, for a restart (`restartOf`). */
  stop(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real supervisor in this process on a free loopback port, with a temporary DATA_DIR and a
 * random token; quiet. Without `manager` it drives the real Docker engine. `env` adds settings;
 * `restartOf` starts it on a stopped one's DATA_DIR and token, as that supervisor restarted.
 */
export async function startTestSupervisor(
  options: { manager?: ContainerManager; env?: Record<string, string>; restartOf?: TestSupervisor } = {},
): Promise<TestSupervisor> {
  const dataDir = options.restartOf?.dataDir ?? (await mkdtemp(join(tmpdir(), "cubicle-test-supervisor-")));
  const token = options.restartOf?.token ?? randomBytes(32).toString("hex");
  try {
    const supervisor = await startSupervisor(
      // port 0: the system picks a free one, and the url names it
      parseConfig({
        ...options.env,
        DATA_DIR: dataDir,
        SANDBOX_SUPERVISOR_TOKEN: token,
        SUPERVISOR_PORT: "0",
      }),
      { ...(options.manager ? { manager: options.manager } : {}), log: () => {} },
    );
    let stopped = false;
    const stop = async () => {
      if (!stopped) await supervisor.close();
      stopped = true;
    };
    return {
      url: supervisor.url,
      token,
      dataDir,
      stop,
      close: async () => {
        await stop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}
