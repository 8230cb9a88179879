import { startE2bEmulator } from "@cubicle/emulators/e2b";
import { createE2bProvider } from "../../src/e2b/index.ts";
import { ArmedFaults } from "../faults.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/**
 * The real e2b adapter and the unmodified SDK against the loopback E2B emulator, whose sandboxes
 * are real desktops in the local Docker engine; every sandbox it made is removed afterwards.
 */
const e2b: MakeProvider = async () => {
  const emulator = await startE2bEmulator({ instance: `suites-${process.pid}` });
  const faults = new ArmedFaults();
  const connection = {
    apiKey: emulator.apiKey,
    apiUrl: emulator.apiUrl,
    sandboxUrl: emulator.sandboxUrl,
    domain: emulator.domain,
  };
  const made = (apiKey: string) =>
    createE2bProvider({
      kind: "e2b-emulator",
      connection: { ...connection, apiKey },
      sandboxLifetimeMs: 15 * 60_000,
      faults,
    });
  return {
    provider: made(emulator.apiKey),
    faults,
    liveScreens: true,
    withWrongCredential: () => made("e2b_wrong"),
    cleanup: () => emulator.close({ removeSandboxes: true }),
  };
};

conformanceSuite("e2b-emulator", e2b);
faultSuite("e2b-emulator", e2b);
