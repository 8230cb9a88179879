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
  close(): Promise<void>;
}

/**
 * A real supervisor in this process on a free loopback port, with a temporary DATA_DIR and a
 * random token; quiet. Without `manager` it drives the real Docker engine.
 */
export async function startTestSupervisor(
  options: { manager?: ContainerManager } = {},
): Promise<TestSupervisor> {
  const dataDir = await mkdtemp(join(tmpdir(), "cubicle-test-supervisor-"));
  const token = randomBytes(32).toString("hex");
  try {
    const supervisor = await startSupervisor(
      // port 0: the system picks a free one, and the url names it
      parseConfig({ DATA_DIR: dataDir, SANDBOX_SUPERVISOR_TOKEN: token, SUPERVISOR_PORT: "0" }),
      { ...options, log: () => {} },
    );
    return {
      url: supervisor.url,
      token,
      dataDir,
      close: async () => {
        await supervisor.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}
