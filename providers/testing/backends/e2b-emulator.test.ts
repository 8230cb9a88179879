import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { egressEnforcementSuite } from "../suites/egress-enforcement.ts";
import { faultSuite } from "../suites/faults.ts";
import { e2b } from "./index.ts";

conformanceSuite("e2b-emulator", e2b, {
  "egress-refusals-observed": "E2B enforces its network rules but reports no refused connection",
});
faultSuite("e2b-emulator", e2b);
browserSandboxSuite("e2b-emulator", e2b);
egressEnforcementSuite("e2b-emulator", e2b);
