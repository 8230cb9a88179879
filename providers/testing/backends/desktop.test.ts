import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDesktopProvider } from "../../src/desktop/index.ts";
import { ArmedFaults } from "../faults.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/** The host's own processes and screens, with homes in a temporary folder removed afterwards. */
const desktop: MakeProvider = async () => {
  const homesDir = await mkdtemp(join(tmpdir(), "cubicle-desktop-homes-"));
  const faults = new ArmedFaults();
  const provider = createDesktopProvider({ homesDir, faults });
  return {
    provider,
    faults,
    liveScreens: provider.capabilities.graphical,
    cleanup: async () => {
      await provider.shutdown();
      await rm(homesDir, { recursive: true, force: true });
    },
  };
};

conformanceSuite("desktop", desktop, {
  "refuses-a-wrong-credential": "it runs this host's own programs and takes no credential",
});
faultSuite("desktop", desktop);
