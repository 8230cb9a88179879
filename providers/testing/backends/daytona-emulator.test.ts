import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { egressEnforcementSuite } from "../suites/egress-enforcement.ts";
import { faultSuite } from "../suites/faults.ts";
import { daytona } from "./index.ts";

conformanceSuite("daytona-emulator", daytona, {
  "egress-refusals-observed": "Daytona reports no refused connections, so neither does its emulator",
});
faultSuite("daytona-emulator", daytona);
browserSandboxSuite("daytona-emulator", daytona);
egressEnforcementSuite("daytona-emulator", daytona);
