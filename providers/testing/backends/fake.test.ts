import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { fake } from "./index.ts";

conformanceSuite("fake", fake, {
  "refuses-a-wrong-credential": "it runs in memory and takes no credential",
  "import-while-a-browser-writes":
    "it runs no browsers (no real screen), and its in-memory home is replaced in one step",
  "lists-the-home":
    "it has no listHome, so the api's checkpoint tests (api/test/checkpoints.test.ts) take on it the path of a backend without one: every checkpoint exported whole",
  "launch-starts-programs":
    "its shell runs no programs, so a launch fails with APP_LAUNCH_FAILED (api/test/tools.test.ts asserts that)",
  "egress-refusals-observed":
    "its shell opens no connections; api/test/egress-policy.test.ts injects refusals through fakeEgress",
});
faultSuite("fake", fake);
