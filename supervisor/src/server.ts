import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import Docker from "dockerode";
import { createApp } from "./app.ts";
import type { SupervisorConfig } from "./config.ts";
import { checkDataDirMount } from "./containers/docker/data-dir-mount.ts";
import { dockerManager } from "./containers/docker/index.ts";
import type { ContainerManager } from "./containers/manager.ts";

export interface RunningSupervisor {
  /** e.g. http://127.0.0.1:7091 */
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the HTTP listener. The Docker manager prepares its network at start when the engine
 * answers; when it does not, the supervisor still starts (and /health says so).
 */
export async function startSupervisor(
  config: SupervisorConfig,
  options: { manager?: ContainerManager; log?: (message: string) => void } = {},
): Promise<RunningSupervisor> {
  const log = options.log ?? ((message: string) => console.log(message));
  let manager = options.manager;
  if (!manager) {
    const docker = await dockerManager(config);
    await checkDataDirMount(new Docker(), config.dataDir);
    await docker.prepare().catch((error: unknown) => {
      log(
        `Docker is not ready yet (${error instanceof Error ? error.message : String(error)}); will retry on use`,
      );
    });
    manager = docker;
  }
  const app = createApp({ token: config.token, manager });
  const server = serve({
    fetch: app.fetch,
    hostname: config.host,
    port: config.port,
    // a home archive may take longer to upload than Node's default of five minutes per request
    serverOptions: { requestTimeout: 0 },
  });
  // A client that disconnects mid-upload (an aborted import) makes Node emit "aborted" on the
  // request; the route already fails through its body stream, so this must not crash the process.
  server.on("request", (request: IncomingMessage) => {
    request.on("error", (error) =>
      log(`request ${request.method} ${request.url} ended early: ${error.message}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${port}`;
  // one line a parent process can read the url from (bin/cubicle-supervisor.mjs, port 0)
  log(`cubicle supervisor listening on ${url}`);
  return {
    url,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // streams (exec output, archives) must not hold the shutdown open
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      await manager.close();
    },
  };
}
