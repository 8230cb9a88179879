import { createFakeProvider } from "../fake/index.ts";
import { ArmedFaults } from "../faults.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import type { MakeProvider } from "../suites/types.ts";

/** In memory, built around a fresh fault plan, with nothing to tear down. */
const fake: MakeProvider = async () => {
  const faults = new ArmedFaults();
  return { provider: createFakeProvider({ faults }), faults, cleanup: async () => {} };
};

conformanceSuite("fake", fake, {
  "refuses-a-wrong-credential": "it runs in memory and takes no credential",
  "import-while-a-browser-writes":
    "it runs no browsers (no real screen), and its in-memory home is replaced in one step",
  "launch-starts-programs":
    "its shell runs no programs, so a launch fails with APP_LAUNCH_FAILED (api/test/tools.test.ts asserts that)",
});
faultSuite("fake", fake);
