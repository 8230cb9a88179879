/**
 * A loopback E2B: its control plane, envd and port traffic, for the unmodified @e2b/desktop SDK,
 * with sandboxes that are real desktop containers on the local Docker engine. Test and development
 * only. See emulators/README.md.
 */
import { shutDown } from "../http/server.ts";
import { machineFirewall } from "../machines/firewall.ts";
import { type EmulatorOptions, instanceOf, localEngine, Machines } from "../machines/index.ts";
import { newToken } from "./ids.ts";
import type { SandboxNetwork } from "./network.ts";
import { SandboxRegistry } from "./registry.ts";
import { listen } from "./server.ts";

export { DESKTOP_TEMPLATE, ENVD_VERSION } from "./control-plane.ts";
export { ALWAYS_DENIED, type SandboxNetwork } from "./network.ts";

/** The image reproducing E2B's `desktop` template (emulators/images/e2b-desktop). */
export const E2B_DESKTOP_IMAGE = "cubicle-e2b-desktop:latest";
/** The E2B_DOMAIN the SDK is given: port URLs are `https://<port>-<sandboxId>.e2b.localhost`. */
export const E2B_EMULATOR_DOMAIN = "e2b.localhost";

export interface E2bEmulator {
  /** E2B_API_URL, e.g. http://127.0.0.1:PORT */
  apiUrl: string;
  /** E2B_SANDBOX_URL: the same server. */
  sandboxUrl: string;
  /** The E2B_DOMAIN the SDK should be given. */
  domain: string;
  apiKey: string;
  /** Deletes a sandbox behind its users' back (its container is removed), as a vendor might. */
  forget(sandboxId: string): Promise<void>;
  /** What the emulator knows, for tests: id, state, metadata, container id and address, network settings. */
  sandboxes(): Promise<
    Array<{
      sandboxId: string;
      state: "running" | "paused";
      metadata: Record<string, string>;
      containerId: string;
      address: string | null;
      network: SandboxNetwork;
    }>
  >;
  /** Stops serving; with removeSandboxes, removes every container it owns. */
  close(options?: { removeSandboxes?: boolean }): Promise<void>;
}

/** The image is E2B_DESKTOP_IMAGE unless told another. */
export type E2bEmulatorOptions = EmulatorOptions;

export async function startE2bEmulator(options: E2bEmulatorOptions = {}): Promise<E2bEmulator> {
  const instance = instanceOf(options, E2B_DESKTOP_IMAGE);
  const { log } = instance;
  const registry = new SandboxRegistry(new Machines(localEngine()), instance, machineFirewall());
  await registry.adopt();
  const apiKey = options.apiKey ?? `e2b_${newToken()}`;
  const { server, url } = await listen({
    plane: { apiKey, registry },
    domain: E2B_EMULATOR_DOMAIN,
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    log,
  });
  log(`E2B emulator listening on ${url}`);
  return {
    apiUrl: url,
    sandboxUrl: url,
    domain: E2B_EMULATOR_DOMAIN,
    apiKey,
    async forget(sandboxId) {
      const sandbox = registry.get(sandboxId);
      if (sandbox) await registry.kill(sandbox);
    },
    async sandboxes() {
      return registry.list().map((sandbox) => ({
        sandboxId: sandbox.id,
        state: sandbox.state,
        metadata: sandbox.record.metadata,
        containerId: sandbox.containerId,
        address: sandbox.ip,
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
