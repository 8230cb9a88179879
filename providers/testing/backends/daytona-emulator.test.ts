import { startDaytonaEmulator } from "@cubicle/emulators/daytona";
import { createDaytonaProvider } from "../../src/daytona/index.ts";
import { ArmedFaults } from "../faults.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/**
 * The real daytona adapter and the unmodified SDK against the loopback Daytona emulator, whose
 * sandboxes are real desktops in the local Docker engine; every sandbox it made is removed afterwards.
 */
const daytona: MakeProvider = async () => {
  const emulator = await startDaytonaEmulator({ instance: `suites-${process.pid}` });
  const faults = new ArmedFaults();
  const made = (apiKey: string) =>
    createDaytonaProvider({
      kind: "daytona-emulator",
      connection: { apiKey, apiUrl: emulator.apiUrl, target: emulator.target },
      faults,
    });
  return {
    provider: made(emulator.apiKey),
    faults,
    liveScreens: true,
    withWrongCredential: () => made("dtn_wrong"),
    cleanup: () => emulator.close({ removeSandboxes: true }),
  };
};

conformanceSuite("daytona-emulator", daytona);
faultSuite("daytona-emulator", daytona);
