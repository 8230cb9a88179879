import { browserSandboxSuite } from "../suites/browser-sandbox.ts";
import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { e2b } from "./index.ts";

conformanceSuite("e2b-emulator", e2b, {
  "egress-refusals-observed": "it enforces only the open level, so nothing is refused",
});
faultSuite("e2b-emulator", e2b);
browserSandboxSuite("e2b-emulator", e2b);
