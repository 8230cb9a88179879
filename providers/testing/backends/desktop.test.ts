import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { desktop } from "./index.ts";

conformanceSuite("desktop", desktop, {
  "refuses-a-wrong-credential": "it runs this host's own programs and takes no credential",
  "egress-refusals-observed": "it enforces only the open level, so nothing is refused",
});
faultSuite("desktop", desktop);
