import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { daytona } from "./index.ts";

conformanceSuite("daytona-emulator", daytona, {
  "egress-refusals-observed": "it enforces only the open level, so nothing is refused",
});
faultSuite("daytona-emulator", daytona);
browserSandboxSuite("daytona-emulator", daytona);
