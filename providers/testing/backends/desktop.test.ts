import { conformanceSuite } from "../suites/conformance.ts";
import { faultSuite } from "../suites/faults.ts";
import { desktop } from "./index.ts";

conformanceSuite("desktop", desktop, {
  "refuses-a-wrong-credential": "it runs this host's own programs and takes no credential",
});
faultSuite("desktop", desktop);
