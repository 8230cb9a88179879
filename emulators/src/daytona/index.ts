/**
 * A loopback Daytona: its API, its toolbox proxy and preview links, for the unmodified
 * @daytonaio/sdk, with sandboxes that are real desktop containers on the local Docker engine. Test
 * and development only. See emulators/README.md.
 */
import { randomBytes } from "node:crypto";
import { shutDown } from "../http/server.ts";
import { machineFirewall } from "../machines/firewall.ts";
import { type EmulatorOptions, instanceOf, localEngine, Machines } from "../machines/index.ts";
import { NetworkEnforcer } from "./enforcer.ts";
import type { NetworkSettings } from "./network.ts";
import { SandboxRegistry } from "./registry.ts";
import { listen } from "./server.ts";

export { DEFAULT_SNAPSHOT } from "./control-plane.ts";

/** The image reproducing Daytona's default sandbox (emulators/images/daytona-desktop). */
export const DAYTONA_DESKTOP_IMAGE = "cubicle-daytona-desktop:latest";
/** The DAYTONA_TARGET the emulator accepts unless told another. */
export const DAYTONA_EMULATOR_TARGET = "local";

export interface DaytonaEmulator {
  /** DAYTONA_API_URL, e.g. http://127.0.0.1:PORT/api */
  apiUrl: string;
  /** DAYTONA_API_KEY */
  apiKey: string;
  /** DAYTONA_TARGET: the one region the emulator has. */
  target: string;
  /** Deletes a sandbox behind its users' back (its container is removed, GET is a 404). */
  forget(sandboxId: string): Promise<void>;
  /** What the emulator knows, for tests. */
  sandboxes(): Promise<
    Array<{
      id: string;
      state: string;
      labels: Record<string, string>;
      containerId: string;
      network: NetworkSettings;
    }>
  >;
  /** Stops serving; with removeSandboxes, removes every container it owns. */
  close(options?: { removeSandboxes?: boolean }): Promise<void>;
}

/** The image is DAYTONA_DESKTOP_IMAGE unless told another. */
export interface DaytonaEmulatorOptions extends EmulatorOptions {
  /** Default DAYTONA_EMULATOR_TARGET. */
  target?: string;
}

export async function startDaytonaEmulator(options: DaytonaEmulatorOptions = {}): Promise<DaytonaEmulator> {
  const instance = instanceOf(options, DAYTONA_DESKTOP_IMAGE);
  const { log } = instance;
  const registry = new SandboxRegistry(
    new Machines(localEngine()),
    instance,
    new NetworkEnforcer(machineFirewall()),
  );
  await registry.adopt();
  const apiKey = options.apiKey ?? `dtn_${randomBytes(24).toString("hex")}`;
  const target = options.target ?? DAYTONA_EMULATOR_TARGET;
  const { server, url } = await listen({
    apiKey,
    plane: { registry, target },
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    log,
  });
  log(`Daytona emulator listening on ${url}`);
  return {
    apiUrl: `${url}/api`,
    apiKey,
    target,
    async forget(sandboxId) {
      const sandbox = registry.get(sandboxId);
      if (sandbox) await registry.delete(sandbox);
    },
    async sandboxes() {
      return registry.list().map((sandbox) => ({
        id: sandbox.id,
        state: sandbox.state,
        labels: sandbox.record.labels,
        containerId: sandbox.containerId,
        network: sandbox.network,
      }));
    },
    async close(closeOptions = {}) {
      registry.release();
      await shutDown(server);
      if (closeOptions.removeSandboxes) await registry.removeAll();
    },
  };
}
