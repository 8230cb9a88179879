import { type E2bEmulator, startE2bEmulator } from "@cubicle/emulators/e2b";
import { vendorApiSuite } from "../../testing/vendor-api-suite.ts";

/**
 * The api on SANDBOX_PROVIDER=e2b, configured only by E2B_API_KEY and the SDK's own redirect
 * settings, against the loopback E2B emulator (the unmodified SDK): the shared vendor suite, with
 * idle suspension as a pause and a resume of the same sandbox.
 * (A *.postgres test: run once, on the production dialect; sandboxes are heavy.)
 */
vendorApiSuite<E2bEmulator>({
  name: "E2B",
  kind: "e2b",
  keyVariable: "E2B_API_KEY",
  wrongKey: "e2b_wrong_key",
  states: { running: "running", stopped: "paused" },
  start: (instance) => startE2bEmulator({ instance }),
  env: (emulator, apiKey) => ({
    E2B_API_KEY: apiKey,
    E2B_API_URL: emulator.apiUrl,
    E2B_SANDBOX_URL: emulator.sandboxUrl,
    E2B_DOMAIN: emulator.domain,
  }),
  machine: async (emulator, ref) => {
    const sandbox = (await emulator.sandboxes()).find(({ sandboxId }) => sandboxId === ref);
    return sandbox && { id: sandbox.sandboxId, state: sandbox.state };
  },
  forget: (emulator, ref) => emulator.forget(ref),
  close: (emulator) => emulator.close({ removeSandboxes: true }),
});
