import { type DaytonaEmulator, startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { vendorApiSuite } from "../../testing/vendor-api-suite.ts";

/**
 * The api on SANDBOX_PROVIDER=daytona, configured only by DAYTONA_API_KEY, DAYTONA_API_URL and
 * DAYTONA_TARGET, against the loopback Daytona emulator (the unmodified SDK): the shared vendor
 * suite, with idle suspension as a stop and an explicit start of the same sandbox.
 * (A *.postgres test: run once, on the production dialect; sandboxes are heavy.)
 */
vendorApiSuite<DaytonaEmulator>({
  name: "Daytona",
  kind: "daytona",
  keyVariable: "DAYTONA_API_KEY",
  wrongKey: "dtn_wrong_key",
  states: { running: "started", stopped: "stopped" },
  start: (instance) => startDaytonaEmulator({ instance }),
  env: (emulator, apiKey) => ({
    DAYTONA_API_KEY: apiKey,
    DAYTONA_API_URL: emulator.apiUrl,
    DAYTONA_TARGET: emulator.target,
  }),
  machine: async (emulator, ref) => {
    const sandbox = (await emulator.sandboxes()).find(({ id }) => id === ref);
    return sandbox && { id: sandbox.id, state: sandbox.state };
  },
  forget: (emulator, ref) => emulator.forget(ref),
  close: (emulator) => emulator.close({ removeSandboxes: true }),
});
